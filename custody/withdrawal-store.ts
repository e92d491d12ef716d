import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Option, Schema } from "effect"
import type { AssetCatalog } from "../src/assets/asset-catalog.js"
import type { Chain } from "../src/domain/chain.js"
import { type Withdrawal, WithdrawalApproval, type WithdrawalStatus } from "../src/domain/withdrawal.js"
import { Accounts, type LedgerTransfer } from "../src/ledger/ledger.js"

const WithdrawalRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  out_withdrawal_no: Schema.NullOr(Schema.String),
  status: Schema.Literal("PENDING", "APPROVED", "REJECTED", "CANCELLED", "BROADCAST", "COMPLETED", "FAILED"),
  chain: Schema.Literal("TRC20", "BEP20", "POLYGON", "SOLANA"),
  currency: Schema.String,
  amount: Schema.String,
  platform_fee: Schema.String,
  network_fee: Schema.String,
  network_fee_asset: Schema.String,
  network_fee_included: Schema.Boolean,
  total_fee: Schema.String,
  net_amount: Schema.String,
  to_address: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  fee_policy_version: Schema.String,
  failure_reason: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String),
  required_approvals: Schema.Number,
  created_by_user_id: Schema.NullOr(Schema.String),
  approvals: Schema.Array(WithdrawalApproval),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type WithdrawalRow = typeof WithdrawalRow.Type
const decodeRows = Schema.decodeUnknown(Schema.Array(WithdrawalRow))
const COLUMNS = `id, merchant_id, out_withdrawal_no, status, chain, currency, amount::text AS amount, platform_fee::text AS platform_fee,
  network_fee::text AS network_fee, network_fee_asset, network_fee_included, total_fee::text AS total_fee, net_amount::text AS net_amount,
  to_address, tx_hash, fee_policy_version, failure_reason, operation_id, required_approvals, created_by_user_id,
  (SELECT coalesce(json_agg(json_build_object('approved_by', a.approved_by, 'approver_kind', a.approver_kind,
            'approved_at', to_char(a.approved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY a.approved_at), '[]'::json)
   FROM withdrawal_approvals a WHERE a.withdrawal_id = withdrawals.id) AS approvals,
  created_at, updated_at`

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

/**
 * Withdrawal rows and how the API shows them; shared by the request side (Withdrawals), the human
 * decisions (WithdrawalDecisions) and the operator CLI.
 */
export class WithdrawalStore extends Effect.Service<WithdrawalStore>()("facet/WithdrawalStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const render = (row: WithdrawalRow): Withdrawal => ({
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
      created_at: DateTime.formatIso(DateTime.unsafeFromDate(row.created_at)),
      updated_at: DateTime.formatIso(DateTime.unsafeFromDate(row.updated_at))
    })

    /** One withdrawal (of one merchant when given), locked for the caller's transaction when asked. */
    const find = (where: { readonly id: string; readonly merchantId?: string | undefined; readonly lock?: boolean }) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE id = ${where.id}
          ${where.merchantId === undefined ? sql`` : sql`AND merchant_id = ${where.merchantId}`} ${where.lock === true ? sql`FOR UPDATE` : sql``}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** Locked funds back to available (a rejection, cancellation, failure, or what a completion did not use). */
    const unlock = (row: WithdrawalRow, units: bigint, kind: string): LedgerTransfer => ({
      debit: Accounts.locked(row.merchant_id),
      credit: Accounts.available(row.merchant_id),
      chain: row.chain,
      currency: row.currency,
      amount: units,
      kind,
      reference: row.id
    })

    const list = Effect.fn("WithdrawalStore.list")(function* (
      merchantId: string,
      query: { readonly status?: WithdrawalStatus | undefined; readonly limit: number; readonly offset: number }
    ) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
      ])
      const [count] = yield* Effect.orDie(sql<{ n: number }>`SELECT count(*)::int AS n FROM withdrawals WHERE ${where}`)
      const rows =
        yield* sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawals WHERE ${where} ORDER BY created_at DESC, id DESC
                              LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.orDie
        )
      return { total: count?.n ?? 0, limit: query.limit, offset: query.offset, items: rows.map(render) }
    })

    /** Every merchant's withdrawals, newest first, with the merchant and the decision (operators only). */
    const listAll = Effect.fn("WithdrawalStore.listAll")(function* (query: {
      readonly status?: WithdrawalStatus | undefined
      readonly limit: number
    }) {
      return yield* sql<Record<string, unknown>>`
        SELECT id, merchant_id, status, chain, currency, amount::text AS amount, net_amount::text AS net_amount, to_address, tx_hash,
               decided_by, decided_at, decision_reason, failure_reason, created_at
        FROM withdrawals ${query.status === undefined ? sql`` : sql`WHERE status = ${query.status}`}
        ORDER BY created_at DESC LIMIT ${query.limit}`
    })

    return { find, render, unlock, list, listAll } as const
  })
}) {}
