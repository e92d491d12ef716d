import { DateTime } from "effect"
import { normalizeDecimal } from "../money.js"
import type { TransactionRow } from "../stores/transaction-store.js"

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
  block_number: row.block_number === null ? null : Number(row.block_number),
  confirmations: row.confirmations,
  ...(row.order_id === null ? {} : { order_id: row.order_id }),
  ...(row.deposit_address_id === null ? {} : { deposit_address_id: row.deposit_address_id }),
  ...(row.withdrawal_id === null ? {} : { withdrawal_id: row.withdrawal_id }),
  ...(row.operation_id === null ? {} : { operation_id: row.operation_id }),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})
