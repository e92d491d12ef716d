import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { WithdrawalApproval, WithdrawalStatus } from "../domain/withdrawal.js"
import { WithdrawalBatchStatus } from "../domain/withdrawal-batch.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/** The decision a batch is in (its stored status); its progress is its items'. */
const BatchDecision = Schema.Literal("PENDING", "APPROVED", "REJECTED", "CANCELLED")

const BatchRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  decision: BatchDecision,
  /** PENDING, PROCESSING (approved, an item not yet COMPLETED or FAILED), COMPLETED, REJECTED, CANCELLED. */
  status: WithdrawalBatchStatus,
  description: Schema.NullOr(Schema.String),
  item_count: Schema.Number,
  required_approvals: Schema.Number,
  created_by_user_id: Schema.NullOr(Schema.String),
  source: Schema.Literal("api", "console_csv"),
  decided_by: Schema.NullOr(Schema.String),
  decision_reason: Schema.NullOr(Schema.String),
  approvals: Schema.Array(WithdrawalApproval),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type WithdrawalBatchRow = typeof BatchRow.Type

// the batch's status is derived from its decision and, once approved, its items (read from `withdrawals`)
const COLUMNS = `b.id, b.merchant_id, b.status AS decision,
  CASE WHEN b.status <> 'APPROVED' THEN b.status
       WHEN EXISTS (SELECT 1 FROM withdrawals w WHERE w.batch_id = b.id AND w.status NOT IN ('COMPLETED', 'FAILED')) THEN 'PROCESSING'
       ELSE 'COMPLETED' END AS status,
  b.description, b.item_count, b.required_approvals, b.created_by_user_id, b.source, b.decided_by, b.decision_reason,
  (SELECT coalesce(json_agg(json_build_object('approved_by', a.approved_by, 'approver_kind', a.approver_kind,
            'approved_at', to_char(a.approved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY a.approved_at), '[]'::json)
   FROM withdrawal_batch_approvals a WHERE a.batch_id = b.id) AS approvals,
  b.created_at, b.updated_at`

/** A batch's items of one asset in one status: how many, and their sums (asset units). */
const SummaryRow = Schema.Struct({
  batch_id: Schema.String,
  chain: Chain,
  currency: Schema.String,
  status: WithdrawalStatus,
  n: Schema.Number,
  amount: Schema.String,
  net_amount: Schema.String,
  total_fee: Schema.String
})
export type WithdrawalBatchSummaryRow = typeof SummaryRow.Type

/** A new batch, as its admission stores it. */
export type NewWithdrawalBatch = {
  readonly id: string
  readonly merchant_id: string
  readonly status: "PENDING"
  readonly description: string | null
  readonly item_count: number
  readonly required_approvals: number
  readonly admitted_at: Date
  readonly created_by: string
  readonly created_by_user_id: string | null
  readonly source: "api" | "console_csv"
}

/** An approval of a batch (one per person; at most one that is not a console user's). */
export type NewBatchApproval = {
  readonly batch_id: string
  readonly approver_kind: "console_user" | "operator" | "policy"
  readonly user_id: string | null
  readonly approved_by: string
  readonly from_address: string
  readonly user_agent: string
}

const IdRow = Schema.Struct({ id: Schema.String })
const PendingBatchRow = Schema.Struct({ id: Schema.String, required_approvals: Schema.Number })
const CountRow = Schema.Struct({ n: Schema.Number })

/**
 * Every statement on `withdrawal_batches` and `withdrawal_batch_approvals`. A batch's items are withdrawals
 * (WithdrawalStore writes them); this store reads them for a batch's status and its sums. A statement runs in
 * the caller's transaction when it has one.
 */
export class WithdrawalBatchStore extends Effect.Service<WithdrawalBatchStore>()("facet/WithdrawalBatchStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** One batch (of one merchant when given), locked for the caller's transaction when asked. */
    const find = (where: { readonly id: string; readonly merchantId?: string | undefined; readonly lock?: boolean }) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawal_batches b WHERE b.id = ${where.id}
          ${where.merchantId === undefined ? sql`` : sql`AND b.merchant_id = ${where.merchantId}`}
          ${where.lock === true ? sql`FOR UPDATE OF b` : sql``}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(BatchRow))
      )

    /** A page of a merchant's batches, newest first (in one status when given), with how many there are. */
    const page = Effect.fn("WithdrawalBatchStore.page")(function* (
      merchantId: string,
      query: {
        readonly status?: typeof WithdrawalBatchStatus.Type | undefined
        readonly limit: number
        readonly offset: number
      }
    ) {
      const batches = sql`SELECT ${sql.literal(COLUMNS)} FROM withdrawal_batches b WHERE b.merchant_id = ${merchantId}`
      const where = query.status === undefined ? sql`` : sql`WHERE status = ${query.status}`
      const total = yield* Effect.orDie(sql`SELECT count(*)::int AS n FROM (${batches}) x ${where}`).pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
      const rows = yield* Effect.orDie(
        sql`SELECT * FROM (${batches}) x ${where} ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`
      ).pipe(Effect.flatMap(decodeAll(BatchRow)))
      return { total, rows }
    })

    /** Per batch, asset and item status: how many items, and their sums. */
    const summaries = Effect.fn("WithdrawalBatchStore.summaries")(function* (batchIds: ReadonlyArray<string>) {
      if (batchIds.length === 0) return []
      return yield* Effect.orDie(sql`
        SELECT batch_id, chain, currency, status, count(*)::int AS n, sum(amount)::text AS amount,
               sum(net_amount)::text AS net_amount, sum(total_fee)::text AS total_fee
        FROM withdrawals WHERE batch_id = ANY(${batchIds}::text[])
        GROUP BY batch_id, chain, currency, status ORDER BY batch_id, chain, currency, status`).pipe(
        Effect.flatMap(decodeAll(SummaryRow))
      )
    })

    const insert = (row: NewWithdrawalBatch) =>
      sql`INSERT INTO withdrawal_batches ${sql.insert(row)}`.pipe(Effect.asVoid)

    const insertApproval = (approval: NewBatchApproval) =>
      sql`INSERT INTO withdrawal_batch_approvals ${sql.insert(approval)}`.pipe(Effect.asVoid)

    /** The approvals of a batch that count: all but those of a user removed since. */
    const countedApprovals = Effect.fn("WithdrawalBatchStore.countedApprovals")(function* (batchId: string) {
      return yield* sql`
            SELECT count(*)::int AS n FROM withdrawal_batch_approvals a LEFT JOIN console_users u ON u.id = a.user_id
            WHERE a.batch_id = ${batchId} AND (u.id IS NULL OR u.removed_at IS NULL)`.pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
    })

    /**
     * A merchant's PENDING batches, locked for the caller's transaction (a tightened quorum applies to them).
     * Taken before their items are, the order a batch's decision locks them in.
     */
    const lockPending = (merchantId: string) =>
      sql`SELECT id, required_approvals FROM withdrawal_batches
          WHERE merchant_id = ${merchantId} AND status = 'PENDING' ORDER BY id FOR UPDATE`.pipe(
        Effect.flatMap(decodeAll(PendingBatchRow))
      )

    const raiseRequiredApprovals = (id: string, required: number) =>
      sql`UPDATE withdrawal_batches SET required_approvals = ${required}, updated_at = clock_timestamp() WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    /** The decision that ends a batch's PENDING state. */
    const recordDecision = (
      id: string,
      decision: "APPROVED" | "REJECTED" | "CANCELLED",
      by: string,
      from: string,
      reason: string | null
    ) =>
      sql`UPDATE withdrawal_batches SET status = ${decision}, decided_by = ${by}, decided_at = clock_timestamp(),
                     decided_from = ${from}, decision_reason = ${reason}, updated_at = clock_timestamp()
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /** PENDING batches created more than `hours` ago (the first 100): nobody decided them in time. */
    const undecidedFor = Effect.fn("WithdrawalBatchStore.undecidedFor")(function* (hours: number) {
      const due = yield* Effect.orDie(sql`
        SELECT id FROM withdrawal_batches WHERE status = 'PENDING' AND created_at < clock_timestamp() - ${hours} * interval '1 hour' LIMIT 100`).pipe(
        Effect.flatMap(decodeAll(IdRow))
      )
      return due.map((row) => row.id)
    })

    /** A devnet reset: every batch goes, after its items (WithdrawalStore.forgetAll). */
    const forgetAll = Effect.zipRight(
      sql`DELETE FROM withdrawal_batch_approvals`,
      sql`DELETE FROM withdrawal_batches`
    ).pipe(Effect.asVoid)

    return {
      find,
      page,
      summaries,
      insert,
      insertApproval,
      countedApprovals,
      lockPending,
      raiseRequiredApprovals,
      recordDecision,
      undecidedFor,
      forgetAll
    } as const
  })
}) {}
