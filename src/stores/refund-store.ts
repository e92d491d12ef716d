import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { RefundStatus } from "../domain/refund.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/** A refund, with what its withdrawal adds once claimed (its hash, what the customer receives). */
export const RefundRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  order_id: Schema.String,
  status: RefundStatus,
  chain: Chain,
  currency: Schema.String,
  amount: Schema.String,
  order_amount: Schema.NullOr(Schema.String),
  rate: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  claim_expires_at: Schema.DateFromSelf,
  to_address: Schema.NullOr(Schema.String),
  withdrawal_id: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  created_by: Schema.String,
  created_by_user_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  claimed_at: Schema.NullOr(Schema.DateFromSelf),
  finished_at: Schema.NullOr(Schema.DateFromSelf),
  /** Whether its claim link's time is up (on the database's clock). */
  link_expired: Schema.Boolean,
  net_amount: Schema.NullOr(Schema.String),
  tx_hash: Schema.NullOr(Schema.String),
  withdrawal_status: Schema.NullOr(Schema.String)
})
export type RefundRow = typeof RefundRow.Type

const COLUMNS = `r.id, r.merchant_id, r.order_id, r.status, r.chain, r.currency, r.amount::text AS amount,
  r.order_amount::text AS order_amount, r.rate::text AS rate, r.reason, r.claim_expires_at, r.to_address, r.withdrawal_id,
  r.failure_reason, r.created_by, r.created_by_user_id, r.created_at, r.updated_at, r.claimed_at, r.finished_at,
  r.claim_expires_at <= clock_timestamp() AS link_expired,
  w.net_amount::text AS net_amount, w.tx_hash, w.status AS withdrawal_status`
const FROM = "refunds r LEFT JOIN withdrawals w ON w.id = r.withdrawal_id"

/** A refund as its claim page shows it, with the merchant's project name. */
const ClaimRow = Schema.Struct({ ...RefundRow.fields, merchant_name: Schema.String })
export type ClaimRow = typeof ClaimRow.Type

/** What one order has refunded or is refunding in one asset (statuses that still hold money). */
const TotalRow = Schema.Struct({ order_id: Schema.String, chain: Chain, currency: Schema.String, total: Schema.String })
export type RefundTotalRow = typeof TotalRow.Type
const SumRow = Schema.Struct({ total: Schema.String })
const CountRow = Schema.Struct({ n: Schema.Number })

/** A new refund: PENDING_CLAIM, its amount locked in the same transaction. */
export interface NewRefund {
  readonly id: string
  readonly merchant_id: string
  readonly order_id: string
  readonly status: "PENDING_CLAIM"
  readonly chain: Chain
  readonly currency: string
  readonly amount: string
  readonly order_amount: string | null
  readonly rate: string | null
  readonly reason: string | null
  readonly claim_token_hash: string
  readonly claim_expires_at: Date
  readonly created_by: string
  readonly created_by_user_id: string | null
}

/** Statuses that no longer hold money, as SQL text (constants, never input). */
const RELEASED = "('CANCELLED', 'EXPIRED', 'FAILED')"

/**
 * Every statement on `refunds`. A refund's view reads its withdrawal (its hash, net amount and status), and
 * its claim page the merchant's project name. A statement runs in the caller's transaction when it has one.
 */
export class RefundStore extends Effect.Service<RefundStore>()("facet/RefundStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const insert = (row: NewRefund) => sql`INSERT INTO refunds ${sql.insert({ ...row })}`.pipe(Effect.asVoid)

    /** One refund (of one merchant when given), locked for the caller's transaction when asked. */
    const find = (where: { readonly id: string; readonly merchantId?: string | undefined; readonly lock?: boolean }) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM ${sql.literal(FROM)} WHERE r.id = ${where.id}
          ${where.merchantId === undefined ? sql`` : sql`AND r.merchant_id = ${where.merchantId}`}
          ${where.lock === true ? sql`FOR UPDATE OF r` : sql``}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(RefundRow))
      )

    /** The refund a claim link's token (its hash) names, with the merchant's name; locked when asked. */
    const findByToken = (tokenHash: string, lock = false) =>
      sql`SELECT ${sql.literal(COLUMNS)}, m.project_name AS merchant_name
          FROM ${sql.literal(FROM)} JOIN merchants m ON m.id = r.merchant_id
          WHERE r.claim_token_hash = ${tokenHash} ${lock ? sql`FOR UPDATE OF r` : sql``}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(ClaimRow))
      )

    /** A page of a merchant's refunds (of one order, of one status, when given), newest first, and how many match. */
    const page = Effect.fn("RefundStore.page")(function* (
      merchantId: string,
      query: {
        readonly status?: RefundStatus | undefined
        readonly orderId?: string | undefined
        readonly limit: number
        readonly offset: number
      }
    ) {
      const where = sql.and([
        sql`r.merchant_id = ${merchantId}`,
        ...(query.status === undefined ? [] : [sql`r.status = ${query.status}`]),
        ...(query.orderId === undefined ? [] : [sql`r.order_id = ${query.orderId}`])
      ])
      const total = yield* sql`SELECT count(*)::int AS n FROM refunds r WHERE ${where}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
      const rows = yield* sql`SELECT ${sql.literal(COLUMNS)} FROM ${sql.literal(FROM)} WHERE ${where}
                              ORDER BY r.created_at DESC, r.id DESC LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAll(RefundRow))
      )
      return { total, rows }
    })

    /** What these orders have refunded or are refunding, per asset (CANCELLED, EXPIRED and FAILED hold nothing). */
    const heldTotals = (orderIds: ReadonlyArray<string>) =>
      orderIds.length === 0
        ? Effect.succeed<ReadonlyArray<RefundTotalRow>>([])
        : sql`SELECT order_id, chain, currency, sum(amount)::text AS total FROM refunds
              WHERE ${sql.in("order_id", orderIds)} AND status NOT IN ${sql.literal(RELEASED)}
              GROUP BY order_id, chain, currency`.pipe(Effect.orDie, Effect.flatMap(decodeAll(TotalRow)))

    /** What one order holds in refunds of one asset (read under the order's lock, so none is made meanwhile). */
    const heldTotal = (orderId: string, chain: Chain, currency: string) =>
      sql`SELECT coalesce(sum(amount), 0)::text AS total FROM refunds
          WHERE order_id = ${orderId} AND chain = ${chain} AND currency = ${currency} AND status NOT IN ${sql.literal(RELEASED)}`.pipe(
        Effect.flatMap(decodeScalar(SumRow, "total", () => "0"))
      )

    /** The customer named the destination: CLAIMED, with the withdrawal that now holds the lock. */
    const markClaimed = (id: string, withdrawalId: string, toAddress: string) =>
      sql`UPDATE refunds SET status = 'CLAIMED', withdrawal_id = ${withdrawalId}, to_address = ${toAddress},
                 claimed_at = clock_timestamp(), updated_at = clock_timestamp()
          WHERE id = ${id} AND status = 'PENDING_CLAIM' RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))

    /** An unclaimed refund CANCELLED or EXPIRED (its lock is returned by the caller): whether it was unclaimed. */
    const release = (id: string, status: "CANCELLED" | "EXPIRED", reason: string | null) =>
      sql`UPDATE refunds SET status = ${status}, failure_reason = ${reason}, updated_at = clock_timestamp(), finished_at = clock_timestamp()
          WHERE id = ${id} AND status = 'PENDING_CLAIM' RETURNING id`.pipe(Effect.map((rows) => rows.length > 0))

    /** A new claim link: the old token's hash replaced (it stops working at once). */
    const replaceToken = (id: string, tokenHash: string) =>
      sql`UPDATE refunds SET claim_token_hash = ${tokenHash}, updated_at = clock_timestamp() WHERE id = ${id}`.pipe(
        Effect.asVoid
      )

    /**
     * A claimed refund follows its withdrawal's end (COMPLETED, or FAILED with why): the refund's id, none
     * when the withdrawal is no refund's or its refund already ended.
     */
    const followWithdrawal = (withdrawalId: string, status: "COMPLETED" | "FAILED", reason: string | null) =>
      sql`UPDATE refunds SET status = ${status}, failure_reason = ${reason}, updated_at = clock_timestamp(), finished_at = clock_timestamp()
          WHERE withdrawal_id = ${withdrawalId} AND status = 'CLAIMED' RETURNING id`.pipe(
        Effect.map((rows) => rows.flatMap((row) => (typeof row.id === "string" ? [row.id] : [])))
      )

    /** Unclaimed refunds whose link's time is up (the first `limit`), locked; SKIP LOCKED shares the work. */
    const dueForExpiry = (limit: number) =>
      sql`SELECT ${sql.literal(COLUMNS)} FROM ${sql.literal(FROM)}
          WHERE r.status = 'PENDING_CLAIM' AND r.claim_expires_at <= clock_timestamp()
          ORDER BY r.claim_expires_at LIMIT ${limit} FOR UPDATE OF r SKIP LOCKED`.pipe(
        Effect.flatMap(decodeAll(RefundRow))
      )

    /** A devnet reset: refunds go with the withdrawals and the payments they were made of. */
    const forgetAll = sql`DELETE FROM refunds`.pipe(Effect.asVoid)

    return {
      insert,
      find,
      findByToken,
      page,
      heldTotals,
      heldTotal,
      markClaimed,
      release,
      replaceToken,
      followWithdrawal,
      dueForExpiry,
      forgetAll
    } as const
  })
}) {}
