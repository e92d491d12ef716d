import { Keypair, PublicKey } from "@solana/web3.js"
import { Effect, Option } from "effect"
import { randomBytes } from "node:crypto"
import type { Chain } from "../src/domain/chain.js"
import { addressFormatProblem, evmAddress, tronAddress } from "../src/keys/address-encoding.js"
import type { WalletStore } from "../src/stores/wallet-store.js"

/** Address format and checksum per chain; Solana wallets must be on the ed25519 curve (not a program address). */
export const addressProblem = (chain: Chain, address: string): string | undefined => {
  if (chain === "POLYGON") return "POLYGON is sunset for withdrawals"
  const format = addressFormatProblem(chain, address)
  if (format !== undefined || chain !== "SOLANA") return format
  return PublicKey.isOnCurve(new PublicKey(address).toBytes())
    ? undefined
    : `${address} is not a Solana wallet address (off the ed25519 curve: a program-derived address)`
}

/**
 * A valid address of the chain that nobody holds a key to and nothing was ever sent to (random: 160 bits on
 * TRON and BEP20, a fresh ed25519 key on Solana), so it holds no account, token or token account: what a
 * fee estimate without a recipient prices, the dearest recipient. Never a destination.
 */
export const unusedAddress = (chain: Chain): string => {
  switch (chain) {
    case "TRC20":
      return tronAddress(randomBytes(20))
    case "SOLANA":
      return Keypair.generate().publicKey.toBase58()
    case "BEP20":
    case "POLYGON":
      return evmAddress(randomBytes(20))
  }
}

/** How two spellings of one address compare: EVM addresses are case-insensitive (the case is a checksum). */
export const addressKey = (chain: Chain, address: string) => (chain === "BEP20" ? address.toLowerCase() : address)

/**
 * Why money may not be sent to this address, if it may not: a malformed address, or one of this service's
 * own wallets (a withdrawal there would come back as a deposit).
 */
export const destinationProblem = Effect.fn("destinationProblem")(function* (
  wallets: WalletStore,
  chain: Chain,
  address: string
) {
  const problem = addressProblem(chain, address)
  if (problem !== undefined) return problem
  const ours = yield* Effect.orDie(wallets.ownWalletKind(chain, addressKey(chain, address), chain === "BEP20"))
  return Option.match(ours, {
    onNone: () => undefined,
    onSome: (kind) => `${address} is one of this service's own ${kind} addresses: withdraw to an address outside it`
  })
})
