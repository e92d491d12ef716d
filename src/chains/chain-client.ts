import { Data, Effect, type Option, Schema } from "effect"
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
  /**
   * Why the node could not trace the block's contract calls (its state is pruned): what contracts sent in
   * it is missing from `transfers`; its logs and top-level transfers are there. Absent: nothing missing.
   */
  readonly untraced?: string
}

export type TransactionStatus = "pending" | "success" | "failed"

export interface TransactionLookup {
  readonly status: TransactionStatus
  readonly blockNumber: Option.Option<bigint>
  readonly confirmations: number
  /** What the transaction burned, in the native asset's base units (once included). */
  readonly fee: Option.Option<bigint>
  /**
   * Solana: what its fee payer's balance fell by in it (the fee, and the rent of any account it made; less
   * what came back to it). Absent where the lookup does not say (other chains, a node without its meta).
   */
  readonly payerSpent?: bigint
}

/**
 * What a custody transaction does instead of a plain transfer of `amount`:
 * - `CloseTokenAccount` (Solana): closes the sender's token account of `currency`, which must hold none, and
 *   returns its rent (all its lamports) to `to`; `amount` is not used.
 * - `StakeEnergy` / `UnstakeEnergy` (TRON, Stake 2.0): freezes `amount` sun of the sender's TRX for energy, or
 *   starts unfreezing it (it returns after the chain's waiting period); `to` is the sender. `StakeBandwidth` /
 *   `UnstakeBandwidth` the same for bandwidth (what the sender's own transactions and activations use).
 * - `DelegateEnergy` / `ReclaimEnergy` (TRON): lends `to` the energy of `amount` sun of the sender's stake,
 *   without a lock (custody takes it back once the transfer it paid for is final), or takes it back.
 */
export type ChainAction =
  | { readonly _tag: "CloseTokenAccount" }
  | { readonly _tag: "StakeEnergy" }
  | { readonly _tag: "UnstakeEnergy" }
  | { readonly _tag: "StakeBandwidth" }
  | { readonly _tag: "UnstakeBandwidth" }
  | { readonly _tag: "DelegateEnergy" }
  | { readonly _tag: "ReclaimEnergy" }

/** What a TRON account can spend without burning TRX, as the node reports it now. */
export interface ResourceAccount {
  /** The account exists on chain (activated): only such an account can be lent energy. */
  readonly activated: boolean
  /** Energy it may use per 24 h (its own stake's and what is lent to it), and what it has used of that. */
  readonly energyLimit: bigint
  readonly energyUsed: bigint
  /** Bandwidth bytes per 24 h, free and staked, and what it has used of them. */
  readonly bandwidthLimit: bigint
  readonly bandwidthUsed: bigint
  /** Of those, the staked bytes per 24 h left now (what creating an account may use). */
  readonly stakedBandwidthLeft: bigint
}

/** A TRON account's Stake 2.0 for energy, in sun. */
export interface EnergyStake {
  /** Frozen for energy, its own and what it lends. */
  readonly staked: bigint
  /** Of that, lent to other accounts. */
  readonly lent: bigint
  /** Unfrozen and waiting out the chain's period; withdrawable from `availableAt` (ms since the epoch). */
  readonly unfreezing: ReadonlyArray<{ readonly amount: bigint; readonly availableAt: number }>
  /** Liquid TRX. */
  readonly balance: bigint
  /** Frozen for its own bandwidth (its own transactions, the accounts it creates). */
  readonly bandwidthStaked: bigint
}

/**
 * What the chain charges, in sun: per energy unit, per bandwidth byte, to create an account (always, and for
 * its bandwidth when the creator's staked bandwidth does not cover it — free bandwidth never does); a
 * transfer's bytes.
 */
export interface ResourcePrices {
  readonly energy: bigint
  readonly bandwidthByte: bigint
  readonly newAccount: bigint
  readonly newAccountBandwidth: bigint
  readonly transferBytes: bigint
}

/** TRON's Stake 2.0 as custody needs it: what accounts have and what a stake can lend. */
export interface EnergyResources {
  readonly account: (address: string) => Effect.Effect<ResourceAccount, ChainRpcError>
  readonly stake: (owner: string) => Effect.Effect<EnergyStake, ChainRpcError>
  /** Sun of `owner`'s stake lent to `receiver` for energy, in solidified state (the chain's final word). */
  readonly lentTo: (owner: string, receiver: string) => Effect.Effect<bigint, ChainRpcError>
  readonly prices: Effect.Effect<ResourcePrices, ChainRpcError>
  /** Energy a token transfer would use now, the contract's dynamic factor included (the node runs it unsent). */
  readonly transferEnergy: (request: {
    readonly from: string
    readonly to: string
    readonly currency: string
    readonly amount: bigint
  }) => Effect.Effect<bigint, ChainRpcError>
  /** Sun of the owner's staked TRX it can lend for energy now (staked, not yet lent). */
  readonly lendable: (owner: string) => Effect.Effect<bigint, ChainRpcError>
  /**
   * The sun of stake whose energy is at least `energy` now, in whole TRX (the network's energy per staked TRX
   * moves with its total stake; `owner`: an account the node answers the totals for).
   */
  readonly stakeFor: (owner: string, energy: bigint) => Effect.Effect<bigint, ChainRpcError>
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
  /** Nothing is signed above these (FeeAboveCap): a node's price is an answer, not an order to pay it. */
  readonly feeCap?: FeeCap
  /** EVM: sign at this gas price at least (a replacement must outbid the transaction it replaces). */
  readonly gasPriceAtLeast?: bigint
  /** Not a transfer but this; a chain that has no such thing refuses it (TransferRejected). */
  readonly action?: ChainAction
}

/**
 * The most a transfer may cost, in the native asset's base units: its maximum fee (gas limit × price,
 * fee_limit + bandwidth, signatures + rent) and the unit price (wei per gas, sun per energy unit, lamports
 * per signature).
 */
export interface FeeCap {
  readonly maxFee: bigint
  readonly maxGasPrice: bigint
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
  /** The unit price it was signed at: wei per gas, sun per energy unit, lamports per signature. */
  readonly gasPrice: bigint
  /**
   * What it moves to `to` when the request could not say (an action): a closed Solana token account's
   * lamports, read when it was signed. Absent: the request's `amount`.
   */
  readonly amount?: bigint
}

/** The facts that decide whether a signed transfer that is not on chain may still land. */
export interface LandingWindow {
  readonly txHash: string
  readonly from: string
  readonly nonce: Option.Option<bigint>
  readonly validUntil: Option.Option<bigint>
  /** The signed bytes as stored: TRON's reference block and Solana's recent blockhash are read from them. */
  readonly raw: string
}

/**
 * What the chain shows of a signed transfer that a lookup did not find in a block. A node's "not found"
 * proves nothing (it may lag, be pruned, or be another node behind the same URL), so "never landed" is
 * only ever concluded from evidence that covers the whole window in which it could have landed.
 */
export type LandingEvidence = Data.TaggedEnum<{
  /** Its window is still open: it may land (send it again, wait). */
  Open: {}
  /**
   * EVM: a transaction of the sender with this nonce is final. Only custody signs for the key, so it was one
   * of custody's own with that nonce: which one is for the caller to find among the attempts it stored.
   */
  NonceUsed: {}
  /**
   * Final state proves it can never land: every final block it could have landed in was read, hash-linked
   * from its reference block to past its expiry, and it is in none (`blocks` read); or its reference block is
   * not on the final chain (`blocks` 0), so no node of that chain can include it. `proof` says which.
   */
  NeverLanded: { readonly blocks: number; readonly proof: string }
  /** Found in block `blockNumber` while those blocks were read: the node's lookup missed it. */
  Landed: { readonly blockNumber: bigint }
  /** Its window is closed, but the blocks that would prove it absent could not all be read (pruned, missing). */
  Unproven: { readonly reason: string }
}>
export const LandingEvidence = Data.taggedEnum<LandingEvidence>()

export class ChainRpcError extends Schema.TaggedError<ChainRpcError>()("ChainRpcError", {
  chain: Schema.String,
  message: Schema.String
}) {}

export class TransferRejected extends Schema.TaggedError<TransferRejected>()("TransferRejected", {
  chain: Schema.String,
  message: Schema.String
}) {}

/** The node's price would make the transfer cost more than its cap allows: nothing was signed. */
export class FeeAboveCap extends Schema.TaggedError<FeeAboveCap>()("FeeAboveCap", {
  chain: Schema.String,
  maxFee: Schema.BigInt,
  gasPrice: Schema.BigInt,
  cap: Schema.Struct({ maxFee: Schema.BigInt, maxGasPrice: Schema.BigInt })
}) {
  override get message() {
    return `${this.chain}: the transfer would cost up to ${this.maxFee} at ${this.gasPrice} per unit, above its cap of ${this.cap.maxFee} at ${this.cap.maxGasPrice} per unit`
  }
}

/** The cap a signed transfer's fee and price must stay within (none: no cap). */
export const checkFeeCap = (
  chain: string,
  cap: FeeCap | undefined,
  maxFee: bigint,
  gasPrice: bigint
): Effect.Effect<void, FeeAboveCap> =>
  cap === undefined || (maxFee <= cap.maxFee && gasPrice <= cap.maxGasPrice)
    ? Effect.void
    : Effect.fail(new FeeAboveCap({ chain, maxFee, gasPrice, cap }))

export interface ChainClient {
  readonly chain: Chain
  /** The hash of the chain's first block: which chain (network, or devnet instance) the node serves. */
  readonly genesis: Effect.Effect<string, ChainRpcError>
  readonly head: Effect.Effect<bigint, ChainRpcError>
  /** The highest block that can no longer be reorganised (by the configured depth or the chain's own finality). */
  readonly finalized: Effect.Effect<bigint, ChainRpcError>
  /**
   * The head and the final height together, from one node (behind several, never one node's head with
   * another's final height): what the indexer goes by.
   */
  readonly tip: Effect.Effect<{ readonly head: bigint; readonly finalized: bigint }, ChainRpcError>
  /** The hash of the node's block at `number`; none where it has none (not yet, skipped, pruned). */
  readonly blockHash: (number: bigint) => Effect.Effect<Option.Option<string>, ChainRpcError>
  /**
   * The blocks `from`–`to` in order: every one of them, or, where the chain skips numbers (Solana slots),
   * every one produced, the client having checked that the others were skipped rather than missing.
   */
  readonly blocks: (from: bigint, to: bigint) => Effect.Effect<ReadonlyArray<ChainBlock>, ChainRpcError>
  /** Whether block numbers may be skipped (Solana slots): gaps in `blocks` are then legitimate. */
  readonly skipsNumbers: boolean
  /**
   * What the client has learned of its node from the blocks it read, for /health's checks: a setting of
   * the node that makes it leave something out (TRON: `trc20_internal_transfers`). Absent: nothing to say.
   */
  readonly nodeChecks?: Effect.Effect<Readonly<Record<string, string>>>
  readonly balance: (address: string, currency: string) => Effect.Effect<bigint, ChainRpcError>
  /** The balance in the chain's final state, with the height it is final at (what reconciliation compares). */
  readonly finalBalance: (
    address: string,
    currency: string
  ) => Effect.Effect<{ readonly balance: bigint; readonly height: bigint }, ChainRpcError>
  /** Builds and signs (through the Signer) without sending: refused here when it would fail on chain. */
  readonly prepare: (
    request: TransferRequest
  ) => Effect.Effect<SignedTransfer, ChainRpcError | TransferRejected | FeeAboveCap>
  /** Sends signed bytes; sending the same bytes again is harmless (a node that knows them is success). */
  readonly broadcast: (raw: string) => Effect.Effect<void, ChainRpcError | TransferRejected>
  /**
   * What final state shows of a signed transaction a lookup did not find (LandingEvidence): EVM compares
   * the sender's final nonce; TRON and Solana read every final block of its validity window.
   */
  readonly landing: (window: LandingWindow) => Effect.Effect<LandingEvidence, ChainRpcError>
  /**
   * The native base units this transfer is expected to cost whoever pays its fee (a token sweep's gas, an
   * account's creation, a Solana recipient's token-account rent), with no margin: callers add theirs (TRON's
   * fee_limit margin is the signed transaction's own, not in here); `sponsored`: a separate fee payer signs
   * too (Solana).
   */
  readonly feeEstimate: (request: {
    readonly from: string
    readonly to: string
    readonly currency: string
    readonly amount: bigint
    readonly sponsored: boolean
  }) => Effect.Effect<bigint, ChainRpcError>
  /** EVM: the number of transactions the address has sent, in final state (what custody's nonces start from). */
  readonly finalNonce: (address: string) => Effect.Effect<bigint, ChainRpcError>
  readonly transaction: (txHash: string) => Effect.Effect<Option.Option<TransactionLookup>, ChainRpcError>
  /**
   * Whether the final block at `blockNumber` holds the transaction, read as final (TRON solidified, Solana
   * finalized): a lookup's "in block n" may come from a node on another branch, and custody books (or
   * gives money back for a failed one) only on this.
   */
  readonly finalInclusion: (txHash: string, blockNumber: bigint) => Effect.Effect<boolean, ChainRpcError>
  /** TRON: energy and bandwidth (Stake 2.0). Absent on chains without them. */
  readonly energy?: EnergyResources
}

/** Prepare and broadcast in one go, for tools and tests; custody stores the signed bytes in between. */
export const sendTransfer = (client: ChainClient, request: TransferRequest) =>
  Effect.flatMap(client.prepare(request), (signed) => Effect.as(client.broadcast(signed.raw), signed.txHash))
