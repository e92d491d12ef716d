import { createHash } from "node:crypto"
import { Either, Schema } from "effect"

/** The three chain models of the simulation, named with the real chain ids so TransferSender's branches run. */
export const SimChainId = Schema.Literal("BEP20", "TRC20", "SOLANA")
export type SimChainId = typeof SimChainId.Type

/**
 * A transaction as the simulated chains sign it. Its raw bytes are its JSON, its hash a digest of them, so
 * signing is deterministic: the same request at the same reference block (TRON, Solana) or nonce and price
 * (EVM) is the same transaction.
 */
export const SimTx = Schema.Struct({
  chain: SimChainId,
  from: Schema.String,
  feePayer: Schema.String,
  to: Schema.String,
  currency: Schema.String,
  amount: Schema.BigInt,
  /** EVM: the sender's nonce. */
  nonce: Schema.NullOr(Schema.BigInt),
  /** Wei per gas, sun per energy unit, lamports per signature. */
  gasPrice: Schema.BigInt,
  /** The units it burns when included (gas, energy or bandwidth bytes, signatures); the fee is units × price. */
  units: Schema.BigInt,
  /** The most it may burn (what the fee cap judged). */
  maxFee: Schema.BigInt,
  /** TRON: the reference block; Solana: the block of its recent blockhash. */
  refBlock: Schema.NullOr(Schema.BigInt),
  /** TRON: expiration (ms); Solana: lastValidBlockHeight. */
  validUntil: Schema.NullOr(Schema.BigInt),
  /** A ChainAction's tag (no balance moves but the fee). */
  action: Schema.NullOr(Schema.String)
})
export type SimTx = typeof SimTx.Type

const SimTxJson = Schema.parseJson(SimTx)
const encodeRaw = Schema.encodeSync(SimTxJson)
const decodeRaw = Schema.decodeUnknownEither(SimTxJson)

/** The signed bytes of a transaction. */
export const rawOf = (tx: SimTx): string => encodeRaw(tx)

/** The transaction in signed bytes; none for bytes no simulated chain signed. */
export const txOfRaw = (raw: string): SimTx | undefined => Either.getOrUndefined(decodeRaw(raw))

/** The hash that names signed bytes. */
export const hashOfRaw = (raw: string): string => `0x${createHash("sha256").update(raw).digest("hex")}`

/** The fee a transaction burns when included. */
export const feeOf = (tx: SimTx): bigint => tx.units * tx.gasPrice

/** Whether the transaction moves the chain's native coin (its amount comes out of the sender's coins). */
export const NATIVE: Record<SimChainId, string> = { BEP20: "BNB", TRC20: "TRX", SOLANA: "SOL" }
