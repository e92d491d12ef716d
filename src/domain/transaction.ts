import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"

export const TransactionType = Schema.Literal("deposit", "withdrawal", "collection", "gas_funding")
export const TransactionStatus = Schema.Literal("pending", "confirmed", "failed", "reversed")

/** Transaction as docs/reference/decisions.md shapes it. */
export const Transaction = Schema.Struct({
  id: Schema.String,
  type: TransactionType,
  status: TransactionStatus,
  chain: Chain,
  currency: Schema.String,
  amount: DecimalString,
  tx_hash: Schema.String,
  event_index: Schema.Int,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  block_number: Schema.NullOr(Schema.Int),
  confirmations: Schema.Int,
  order_id: Schema.optional(Schema.String),
  deposit_address_id: Schema.optional(Schema.String),
  withdrawal_id: Schema.optional(Schema.String),
  /** The custody operation (a collection or gas funding) that sent it. */
  operation_id: Schema.optional(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Transaction" })
export type Transaction = typeof Transaction.Type

export const TransactionList = Schema.Struct({
  total: Schema.Int,
  limit: Schema.Int,
  offset: Schema.Int,
  items: Schema.Array(Transaction)
}).annotations({ identifier: "TransactionList" })

export const TransactionListQuery = Schema.Struct({
  q: Schema.optional(Schema.String),
  type: Schema.optional(TransactionType),
  status: Schema.optional(TransactionStatus),
  chain: Schema.optional(Chain),
  currency: Schema.optional(Schema.String),
  limit: Schema.optionalWith(
    Schema.NumberFromString.pipe(
      Schema.int(),
      Schema.between(1, 100, { message: () => "limit must be an integer from 1 to 100" })
    ),
    { default: () => 50 }
  ),
  offset: Schema.optionalWith(
    Schema.NumberFromString.pipe(
      Schema.int(),
      Schema.greaterThanOrEqualTo(0, { message: () => "offset must be an integer of at least 0" })
    ),
    { default: () => 0 }
  )
}).annotations({ parseOptions: { errors: "all" } })
