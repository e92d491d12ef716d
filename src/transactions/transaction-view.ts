import { DateTime, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { Transaction } from "../domain/transaction.js"
import { normalizeDecimal } from "../money.js"

export const TRANSACTION_COLUMNS =
  "id, type, status, chain, currency, amount::text AS amount, tx_hash, event_index, from_address, to_address, block_number::text AS block_number, confirmations, order_id, deposit_address_id, withdrawal_id, operation_id, created_at, updated_at"

const TransactionRow = Schema.Struct({
  id: Schema.String,
  type: Transaction.fields.type,
  status: Transaction.fields.status,
  chain: Chain,
  currency: Schema.String,
  amount: Schema.String,
  tx_hash: Schema.String,
  event_index: Schema.Number,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  block_number: Schema.NullOr(Schema.NumberFromString),
  confirmations: Schema.Number,
  order_id: Schema.NullOr(Schema.String),
  deposit_address_id: Schema.NullOr(Schema.String),
  withdrawal_id: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
type TransactionRow = typeof TransactionRow.Type
export const decodeTransactionRows = Schema.decodeUnknown(Schema.Array(TransactionRow))

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

/** Transaction as the API shows it (docs/reference/decisions.md). */
export const renderTransaction = (row: TransactionRow) => ({
  id: row.id,
  type: row.type,
  status: row.status,
  chain: row.chain,
  currency: row.currency,
  amount: normalizeDecimal(row.amount),
  tx_hash: row.tx_hash,
  event_index: row.event_index,
  from_address: row.from_address,
  to_address: row.to_address,
  block_number: row.block_number,
  confirmations: row.confirmations,
  ...(row.order_id === null ? {} : { order_id: row.order_id }),
  ...(row.deposit_address_id === null ? {} : { deposit_address_id: row.deposit_address_id }),
  ...(row.withdrawal_id === null ? {} : { withdrawal_id: row.withdrawal_id }),
  ...(row.operation_id === null ? {} : { operation_id: row.operation_id }),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})
