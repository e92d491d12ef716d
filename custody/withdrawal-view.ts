import { DateTime, Effect, Option } from "effect"
import type { AssetCatalog } from "../src/assets/asset-catalog.js"
import type { Chain } from "../src/domain/chain.js"
import type { Withdrawal } from "../src/domain/withdrawal.js"
import { Accounts, type LedgerTransfer } from "../src/ledger/ledger.js"
import type { WithdrawalRow } from "../src/stores/withdrawal-store.js"

/**
 * A withdrawal row (WithdrawalStore) as the API shows it, and what its locked funds become; shared by the
 * request side (Withdrawals) and the human decisions (WithdrawalDecisions).
 */
export const render = (row: WithdrawalRow): Withdrawal => ({
  withdrawal_id: row.id,
  out_withdrawal_no: row.out_withdrawal_no,
  status: row.status,
  chain: row.chain,
  currency: row.currency,
  amount: row.amount,
  platform_fee: row.platform_fee,
  network_fee: row.network_fee,
  network_fee_asset: row.network_fee_asset,
  network_fee_included: row.network_fee_included,
  total_fee: row.total_fee,
  net_amount: row.net_amount,
  to_address: row.to_address,
  tx_hash: row.tx_hash,
  fee_policy_version: row.fee_policy_version,
  failure_reason: row.failure_reason,
  required_approvals: row.required_approvals,
  approvals: row.approvals,
  ...(row.batch_id === null ? {} : { batch_id: row.batch_id }),
  kind: row.kind,
  ...(row.refund_id === null ? {} : { refund_id: row.refund_id }),
  ...(row.refund_order_id === null ? {} : { order_id: row.refund_order_id }),
  created_at: DateTime.formatIso(DateTime.unsafeFromDate(row.created_at)),
  updated_at: DateTime.formatIso(DateTime.unsafeFromDate(row.updated_at))
})

/** Locked funds back to available (a rejection, cancellation, failure, or what a completion did not use). */
export const unlock = (row: WithdrawalRow, units: bigint, kind: string): LedgerTransfer => ({
  debit: Accounts.locked(row.merchant_id),
  credit: Accounts.available(row.merchant_id),
  chain: row.chain,
  currency: row.currency,
  amount: units,
  kind,
  reference: row.id
})

/**
 * The decimals on chain of a withdrawal's asset. Never guessed: base units computed with the wrong decimals
 * would move the wrong amount, so a missing asset is a defect, not a default.
 */
export const assetDecimals = (
  catalog: AssetCatalog,
  row: { readonly merchant_id: string; readonly chain: Chain; readonly currency: string }
) =>
  Effect.flatMap(
    catalog.policy(row.merchant_id, row.chain, row.currency),
    Option.match({
      onNone: () =>
        Effect.dieMessage(`asset ${row.chain}-${row.currency} is not in the catalogue: refusing to compute base units`),
      onSome: (policy) => Effect.succeed(policy.decimals)
    })
  )
