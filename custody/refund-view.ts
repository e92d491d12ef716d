import { DateTime } from "effect"
import type { Refund } from "../src/domain/refund.js"
import type { RefundRow } from "../src/stores/refund-store.js"

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

/** The claim page of a claim link's token. */
export const claimUrl = (baseUrl: string, token: string) => `${baseUrl}/refund-claims/${token}`

/** A refund row (RefundStore) as the API and `refund.updated` show it; the claim URL only where it is shown once. */
export const renderRefund = (row: RefundRow, claim?: string): Refund => ({
  refund_id: row.id,
  order_id: row.order_id,
  status: row.status,
  chain: row.chain,
  currency: row.currency,
  amount: row.amount,
  order_amount: row.order_amount,
  rate: row.rate,
  reason: row.reason,
  ...(claim === undefined ? {} : { claim_url: claim }),
  claim_expires_at: iso(row.claim_expires_at),
  to_address: row.to_address,
  withdrawal_id: row.withdrawal_id,
  net_amount: row.net_amount,
  tx_hash: row.tx_hash,
  failure_reason: row.failure_reason,
  claimed_at: row.claimed_at === null ? null : iso(row.claimed_at),
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})
