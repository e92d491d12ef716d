import { Effect, Option, Schema } from "effect"
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
  /** What the transaction burned, in the native asset's base units (once included). */
  readonly fee: Option.Option<bigint>
}

export interface TransferRequest {
  readonly from: KeyRef
  readonly to: string
  readonly currency: string
  readonly amount: bigint
  /** EVM: the nonce custody reserved in the database; tools without one take the chain's pending count. */
  readonly nonce?: bigint
  /** Solana: the key that pays the fee and any account rent (the platform gas wallet); the sender otherwise. */
  readonly feePayer?: KeyRef
}

/**
 * A transaction signed and not yet sent: custody stores it before broadcasting, so a crash at any point
 * re-sends these exact bytes instead of signing something new.
 */
export interface SignedTransfer {
  readonly txHash: string
  /** Exactly what `broadcast` sends: 0x hex (EVM), base64 wire bytes (Solana), the signed JSON (TRON). */
  readonly raw: string
  readonly from: string
  /** The address whose native balance pays the fee (the sender, or a Solana fee payer). */
  readonly feePayer: string
  readonly nonce: Option.Option<bigint>
  /** TRON: expiration (ms since the epoch); Solana: lastValidBlockHeight; EVM: none (the nonce decides). */
  readonly validUntil: Option.Option<bigint>
  /** The most it can burn, in the native asset's base units (gas limit × price, fee_limit + bandwidth, fees). */
  readonly maxFee: bigint
}

/** The facts that decide whether a signed transfer that is not on chain may still land. */
export interface LandingWindow {
  readonly txHash: string
  readonly from: string
  readonly nonce: Option.Option<bigint>
  readonly validUntil: Option.Option<bigint>
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
  /** Builds and signs (through the Signer) without sending: refused here when it would fail on chain. */
  readonly prepare: (request: TransferRequest) => Effect.Effect<SignedTransfer, ChainRpcError | TransferRejected>
  /** Sends signed bytes; sending the same bytes again is harmless (a node that knows them is success). */
  readonly broadcast: (raw: string) => Effect.Effect<void, ChainRpcError | TransferRejected>
  /**
   * Whether a signed transaction that is not on chain can still land, judged against final state: false
   * only once proven (EVM: its nonce is used; TRON: expired; Solana: past lastValidBlockHeight) and the
   * transaction, asked for after that, is in no block (`landingVerdict`).
   */
  readonly canStillLand: (window: LandingWindow) => Effect.Effect<boolean, ChainRpcError>
  /**
   * The native base units this transfer costs whoever pays its fee (a token sweep's gas, an account's
   * creation, a Solana recipient's token-account rent); `sponsored`: a separate fee payer signs too (Solana).
   */
  readonly feeEstimate: (request: { readonly from: string; readonly to: string; readonly currency: string; readonly amount: bigint; readonly sponsored: boolean }) => Effect.Effect<bigint, ChainRpcError>
  /** EVM: the number of transactions the address has sent, in final state (what custody's nonces start from). */
  readonly finalNonce: (address: string) => Effect.Effect<bigint, ChainRpcError>
  readonly transaction: (txHash: string) => Effect.Effect<Option.Option<TransactionLookup>, ChainRpcError>
}

/** Prepare and broadcast in one go, for tools and tests; custody stores the signed bytes in between. */
export const sendTransfer = (client: ChainClient, request: TransferRequest) =>
  Effect.flatMap(client.prepare(request), (signed) => Effect.as(client.broadcast(signed.raw), signed.txHash))

/**
 * `canStillLand` from a client's window check (nonce unused, not expired). A closed window proves a
 * transfer dead only if the transaction is in no block when asked after the check, of the same node:
 * mined between the sender's lookup and the check, it is the very one that used the nonce (or landed
 * before its expiry), and custody signing another would send the money twice. One only in a mempool
 * behind a closed window never lands.
 */
export const landingVerdict = (
  windowOpen: Effect.Effect<boolean, ChainRpcError>,
  lookup: Effect.Effect<Option.Option<TransactionLookup>, ChainRpcError>
): Effect.Effect<boolean, ChainRpcError> =>
  Effect.flatMap(windowOpen, (open) =>
    open ? Effect.succeed(true) : Effect.map(lookup, (found) => Option.isSome(found) && Option.isSome(found.value.blockNumber)))
