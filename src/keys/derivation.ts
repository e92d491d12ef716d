import { secp256k1 } from "@noble/curves/secp256k1.js"
import { HDKey } from "@scure/bip32"
import { HDKey as Ed25519HDKey } from "micro-ed25519-hdkey"
import type { Chain } from "../domain/chain.js"
import { evmAddress, secp256k1AccountId, solanaAddress, tronAddress } from "./address-encoding.js"

/** Key families: the curve, coin type and address encoding a chain uses. */
export type KeyFamily = "TRON" | "EVM" | "SOLANA"

export const keyFamilyOf = (chain: Chain): KeyFamily =>
  chain === "TRC20" ? "TRON" : chain === "SOLANA" ? "SOLANA" : "EVM"

const COIN_TYPE: Record<KeyFamily, number> = { TRON: 195, EVM: 60, SOLANA: 501 }

const MAX_INDEX = 0x7fffffff

/**
 * BIP-44 paths: `m/44'/coin'/account'/0/index` for secp256k1 (TRON, EVM); SLIP-0010 ed25519 allows only
 * hardened steps, so Solana is `m/44'/501'/account'/index'`. The account is the merchant's, the index
 * the address's.
 */
export const derivationPath = (family: KeyFamily, account: number, index: number): string => {
  if (!Number.isInteger(account) || account < 0 || account > MAX_INDEX) throw new RangeError(`bad account ${account}`)
  if (!Number.isInteger(index) || index < 0 || index > MAX_INDEX) throw new RangeError(`bad index ${index}`)
  return family === "SOLANA" ? `m/44'/501'/${account}'/${index}'` : `m/44'/${COIN_TYPE[family]}'/${account}'/0/${index}`
}

export interface DerivedKey {
  readonly family: KeyFamily
  readonly path: string
  readonly address: string
  /** Never leaves the signer: not logged, not stored. */
  readonly privateKey: Uint8Array
  readonly publicKey: Uint8Array
}

export const deriveKey = (seed: Uint8Array, family: KeyFamily, path: string): DerivedKey => {
  if (family === "SOLANA") {
    const node = Ed25519HDKey.fromMasterSeed(seed).derive(path)
    const publicKey = node.publicKeyRaw
    return { family, path, address: solanaAddress(publicKey), privateKey: node.privateKey, publicKey }
  }
  const node = HDKey.fromMasterSeed(seed).derive(path)
  const privateKey = node.privateKey
  if (privateKey === null) throw new Error(`no private key at ${path}`)
  const publicKey = secp256k1.getPublicKey(privateKey, false)
  const accountId = secp256k1AccountId(publicKey)
  return {
    family,
    path,
    address: family === "TRON" ? tronAddress(accountId) : evmAddress(accountId),
    privateKey,
    publicKey
  }
}
