import { keccak_256 } from "@noble/hashes/sha3.js"
import { base58, createBase58check } from "@scure/base"
import { createHash } from "node:crypto"

/** How each network spells an address: EIP-55 hex for BEP20, base58check `T…` for TRON, base58 for Solana. */
// node's sha256 (native), not noble's: the TRON decoders spell every transfer's two addresses, and the
// JavaScript double sha256 was ~40% of the TRON indexer's CPU in the catch-up bench (30 → 5 µs an address)
const base58check = createBase58check((data: Uint8Array) => new Uint8Array(createHash("sha256").update(data).digest()))

const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex")

/** The 20-byte account id of a secp256k1 key: keccak256 of the uncompressed point without its 0x04 prefix. */
export const secp256k1AccountId = (uncompressedPublicKey: Uint8Array): Uint8Array => {
  if (uncompressedPublicKey.length !== 65 || uncompressedPublicKey[0] !== 4) {
    throw new RangeError("expected a 65-byte uncompressed secp256k1 public key")
  }
  return keccak_256(uncompressedPublicKey.subarray(1)).subarray(12)
}

/** EIP-55 mixed-case checksum encoding. */
export const evmAddress = (accountId: Uint8Array): string => {
  const hex = toHex(accountId)
  const hash = toHex(keccak_256(new TextEncoder().encode(hex)))
  let out = "0x"
  for (let i = 0; i < hex.length; i++) {
    const c = hex.charAt(i)
    out += parseInt(hash.charAt(i), 16) >= 8 ? c.toUpperCase() : c
  }
  return out
}

const TRON_PREFIX = 0x41

export const tronAddress = (accountId: Uint8Array): string => {
  const payload = new Uint8Array(21)
  payload[0] = TRON_PREFIX
  payload.set(accountId, 1)
  return base58check.encode(payload)
}

export const solanaAddress = (publicKey: Uint8Array): string => {
  if (publicKey.length !== 32) throw new RangeError("expected a 32-byte ed25519 public key")
  return base58.encode(publicKey)
}

/** The 20-byte account id behind a TRON address, or undefined when it is not a valid one. */
export const tronAccountId = (address: string): Uint8Array | undefined => {
  try {
    const payload = base58check.decode(address)
    return payload.length === 21 && payload[0] === TRON_PREFIX ? payload.subarray(1) : undefined
  } catch {
    return undefined
  }
}

/** A 0x-prefixed 20-byte hex address (any case), as the EVM libraries type it. */
export const isHexAddress = (value: string): value is `0x${string}` => /^0x[0-9a-fA-F]{40}$/.test(value)

/** `T…` base58 or `41…` hex → `41…` lowercase hex, as TRON's HTTP API takes addresses; undefined otherwise. */
export const tronHex41 = (address: unknown): string | undefined => {
  if (typeof address !== "string") return undefined
  if (/^41[0-9a-fA-F]{40}$/.test(address)) return address.toLowerCase()
  const id = tronAccountId(address)
  return id === undefined ? undefined : `41${Buffer.from(id).toString("hex")}`
}

export const isEvmAddress = (address: string): boolean => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) return false
  const lower = address.slice(2).toLowerCase()
  // all-lower or all-upper carries no checksum; mixed case must match EIP-55
  if (address.slice(2) === lower || address.slice(2) === lower.toUpperCase()) return true
  return evmAddress(Buffer.from(lower, "hex")) === address
}

export const isSolanaAddress = (address: string): boolean => {
  try {
    return base58.decode(address).length === 32
  } catch {
    return false
  }
}

/**
 * What is wrong with `address` as an address of `chain` by its format and checksum, if anything (a Solana
 * address's curve is the caller's: a destination must be a wallet, a payment may go to any account).
 */
export const addressFormatProblem = (chain: "TRC20" | "BEP20" | "SOLANA", address: string): string | undefined => {
  switch (chain) {
    case "TRC20":
      return tronAccountId(address) === undefined ? `${address} is not a TRON address (base58check T…)` : undefined
    case "BEP20":
      return isEvmAddress(address)
        ? undefined
        : `${address} is not a BEP20 address (0x + 40 hex digits; mixed case must match its EIP-55 checksum)`
    case "SOLANA":
      return isSolanaAddress(address) ? undefined : `${address} is not a Solana address (32 bytes in base58)`
  }
}
