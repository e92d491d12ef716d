import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"

export const TransactionType = Schema.Literal("deposit", "withdrawal", "collection", "gas_funding")
export const TransactionStatus = Schema.Literal("pending", "confirmed", "failed", "reversed")

/** Transaction as DECISIONS.md shapes it. */
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
