import { Schema } from "effect"
import { Chain } from "../src/domain/chain.js"
import { DecimalString } from "../src/money.js"

export const OperationType = Schema.Literal("collection", "gas_funding", "withdrawal")
export type OperationType = typeof OperationType.Type

/** GAS_FUNDING → SWEEPING → BROADCAST → COMPLETED, or FAILED at any step (nothing moved in the ledger). */
export const OperationStatus = Schema.Literal("GAS_FUNDING", "SWEEPING", "BROADCAST", "COMPLETED", "FAILED")
export type OperationStatus = typeof OperationStatus.Type

export const isFinished = (status: OperationStatus) => status === "COMPLETED" || status === "FAILED"

/** A row of `custody_operations` (amount in base units). */
export const OperationRow = Schema.Struct({
  id: Schema.String,
  type: OperationType,
  status: OperationStatus,
  merchant_id: Schema.String,
  chain: Chain,
  currency: Schema.String,
  wallet_id: Schema.String,
  from_address: Schema.String,
  to_wallet_id: Schema.String,
  to_address: Schema.String,
  amount: Schema.BigInt,
  parent_id: Schema.NullOr(Schema.String),
  gas_funding_id: Schema.NullOr(Schema.String),
  withdrawal_id: Schema.NullOr(Schema.String),
  waiting_for: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  /** Why its wallet is halted (the chain cannot yet prove what became of a transfer), while it is. */
  halted_reason: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type OperationRow = typeof OperationRow.Type
export const OPERATION_COLUMNS =
  "id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, trim_scale(amount)::text AS amount, parent_id, gas_funding_id, withdrawal_id, waiting_for, failure_reason, halted_reason, created_at, updated_at"

/** A row of `custody_transactions`: one signed transaction of an operation. */
/** `replaced`: an EVM attempt outbid by a replacement at its nonce; it can still land until the nonce is used. */
export const AttemptStatus = Schema.Literal(
  "signed",
  "broadcast",
  "included",
  "final",
  "reverted",
  "dropped",
  "rejected",
  "replaced"
)
export type AttemptStatus = typeof AttemptStatus.Type
export const AttemptRow = Schema.Struct({
  chain: Chain,
  tx_hash: Schema.String,
  operation_id: Schema.String,
  attempt: Schema.Number,
  from_address: Schema.String,
  amount: Schema.BigInt,
  raw: Schema.String,
  nonce: Schema.NullOr(Schema.BigInt),
  valid_until: Schema.NullOr(Schema.BigInt),
  max_fee: Schema.BigInt,
  status: AttemptStatus,
  block_number: Schema.NullOr(Schema.BigInt),
  fee: Schema.NullOr(Schema.BigInt),
  /** Handed to a node at least once (it may have accepted it, whatever it answered). */
  sent: Schema.Boolean,
  /** How long ago it was first handed to a node (ms), if it was. */
  sent_ms_ago: Schema.NullOr(Schema.Number),
  /** The unit price it was signed at (attempts stored before migration 0026: unknown). */
  gas_price: Schema.NullOr(Schema.BigInt),
  /** How long ago it was signed and stored (ms). */
  created_ms_ago: Schema.Number
})
export type AttemptRow = typeof AttemptRow.Type
export const ATTEMPT_COLUMNS =
  "chain, tx_hash, operation_id, attempt, from_address, trim_scale(amount)::text AS amount, raw, nonce::text AS nonce, valid_until::text AS valid_until, trim_scale(max_fee)::text AS max_fee, status, block_number::text AS block_number, trim_scale(fee)::text AS fee, first_sent_at IS NOT NULL AS sent, " +
  "(extract(epoch FROM clock_timestamp() - first_sent_at) * 1000)::float8 AS sent_ms_ago, trim_scale(gas_price)::text AS gas_price, " +
  "(extract(epoch FROM clock_timestamp() - created_at) * 1000)::float8 AS created_ms_ago"

/** POST /v1/wallet-assets/{asset_key}/sweep: no other field (400). */
export const SweepRequest = Schema.Struct({
  from_wallet_id: Schema.String.pipe(Schema.minLength(1)),
  amount: Schema.optional(DecimalString)
}).annotations({ identifier: "SweepRequest", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** A sweep or gas-funding operation as the API shows it (amounts in the asset's units). */
export const SweepOperation = Schema.Struct({
  operation_id: Schema.String,
  type: Schema.Literal("collection", "gas_funding"),
  status: OperationStatus,
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  from_wallet_id: Schema.String,
  from_address: Schema.String,
  to_address: Schema.String,
  amount: DecimalString,
  gas_funding: Schema.optional(
    Schema.Struct({
      operation_id: Schema.String,
      status: OperationStatus,
      tx_hash: Schema.NullOr(Schema.String),
      amount: DecimalString,
      asset: Schema.String
    })
  ),
  tx_hash: Schema.optional(Schema.String),
  network_fee: Schema.optional(DecimalString),
  network_fee_asset: Schema.String,
  waiting_for: Schema.optional(Schema.String),
  failure_reason: Schema.optional(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({
  identifier: "SweepOperation",
  description:
    "A collection (sweep) of a receive wallet into the merchant's main wallet, or the gas funding it needed first"
})
export type SweepOperation = typeof SweepOperation.Type
