import { Schema, type Effect, type Option } from "effect"
import type { Chain } from "../domain/chain.js"
import type { KeyRef } from "../keys/signer.js"

/**
 * One shape for every chain family, so the indexer and the custody engine do not care which chain they
 * talk to. Amounts are bigint base units; block numbers and slots are bigint.
 */
export interface NormalizedTransfer {
  readonly chain: Chain
  readonly currency: string
  readonly txHash: string
  /** Log index for token events; -1 for a native value transfer (at most one per transaction). */
  readonly eventIndex: number
  readonly from: string
  /** For SPL tokens: the owner of the destination token account. */
  readonly to: string
  readonly amount: bigint
  readonly blockNumber: bigint
  readonly blockHash: string
  readonly parentHash: string
  readonly success: boolean
}

export interface ChainBlock {
  readonly number: bigint
  readonly hash: string
  readonly parentHash: string
  readonly timestamp: number
  readonly transfers: ReadonlyArray<NormalizedTransfer>
}

export type TransactionStatus = "pending" | "success" | "failed"

export interface TransactionLookup {
  readonly status: TransactionStatus
  readonly blockNumber: Option.Option<bigint>
  readonly confirmations: number
}

export interface TransferRequest {
  readonly from: KeyRef
  readonly to: string
  readonly currency: string
  readonly amount: bigint
}

export class ChainRpcError extends Schema.TaggedError<ChainRpcError>()("ChainRpcError", {
  chain: Schema.String,
  message: Schema.String
}) {}

export class TransferRejected extends Schema.TaggedError<TransferRejected>()("TransferRejected", {
  chain: Schema.String,
  message: Schema.String
}) {}

export interface ChainClient {
  readonly chain: Chain
  /** The hash of the chain's first block: which chain (network, or devnet instance) the node serves. */
  readonly genesis: Effect.Effect<string, ChainRpcError>
  readonly head: Effect.Effect<bigint, ChainRpcError>
  /** The highest block that can no longer be reorganised (by the configured depth or the chain's own finality). */
  readonly finalized: Effect.Effect<bigint, ChainRpcError>
  /**
   * The blocks `from`–`to` in order: every one of them, or, where the chain skips numbers (Solana slots),
   * every one produced, the client having checked that the others were skipped rather than missing.
   */
  readonly blocks: (from: bigint, to: bigint) => Effect.Effect<ReadonlyArray<ChainBlock>, ChainRpcError>
  /** Whether block numbers may be skipped (Solana slots): gaps in `blocks` are then legitimate. */
  readonly skipsNumbers: boolean
  readonly balance: (address: string, currency: string) => Effect.Effect<bigint, ChainRpcError>
  /** The balance in the chain's final state, with the height it is final at (what reconciliation compares). */
  readonly finalBalance: (address: string, currency: string) => Effect.Effect<{ readonly balance: bigint; readonly height: bigint }, ChainRpcError>
  /** Builds, signs (through the Signer) and broadcasts; returns the transaction hash. */
  readonly transfer: (request: TransferRequest) => Effect.Effect<string, ChainRpcError | TransferRejected>
  readonly transaction: (txHash: string) => Effect.Effect<Option.Option<TransactionLookup>, ChainRpcError>
}
