import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { CheckoutMode, OrderStatus } from "../domain/order.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

// ---- rows

const AcceptedAssetRow = Schema.Struct({ chain: Chain, currency: Schema.String })

/** A payment link, every column, with what its status is derived from: its uses and whether it is past expiry. */
export const PaymentLinkRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  product_name: Schema.String,
  product_desc: Schema.NullOr(Schema.String),
  amount: Schema.NullOr(Schema.String),
  min_amount: Schema.NullOr(Schema.String),
  max_amount: Schema.NullOr(Schema.String),
  currency: Schema.String,
  chain: Schema.NullOr(Chain),
  checkout_mode: Schema.NullOr(CheckoutMode),
  accepted_assets: Schema.NullOr(Schema.Array(AcceptedAssetRow)),
  max_uses: Schema.NullOr(Schema.Number),
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  order_expire_minutes: Schema.Number,
  return_url: Schema.NullOr(Schema.String),
  notify_url: Schema.NullOr(Schema.String),
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  deactivated_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  /** The link's PAID orders (its payments, not its visits: an order that is not paid takes nothing). */
  uses: Schema.Number,
  /** Past `expires_at` (by the database's clock). */
  expired: Schema.Boolean
})
export type PaymentLinkRow = typeof PaymentLinkRow.Type

/** A link as its public page shows it: the row and the merchant's name. */
const PublicLinkRow = Schema.Struct({ ...PaymentLinkRow.fields, merchant_name: Schema.String })
export type PublicLinkRow = typeof PublicLinkRow.Type

/** A new link's columns (the rest take their defaults). */
export interface NewPaymentLinkRow {
  readonly id: string
  readonly merchant_id: string
  readonly product_name: string
  readonly product_desc: string | null
  readonly amount: string | null
  readonly min_amount: string | null
  readonly max_amount: string | null
  readonly currency: string
  readonly chain: Chain | null
  readonly checkout_mode: CheckoutMode | null
  /** JSON text. */
  readonly accepted_assets: string | null
  readonly max_uses: number | null
  readonly expires_at: Date | null
  readonly order_expire_minutes: number
  readonly return_url: string | null
  readonly notify_url: string | null
  /** JSON text. */
  readonly metadata: string | null
}

const StatusCountRow = Schema.Struct({ link_id: Schema.String, status: OrderStatus, n: Schema.Number })
export type StatusCountRow = typeof StatusCountRow.Type
const PaidRow = Schema.Struct({ link_id: Schema.String, chain: Chain, currency: Schema.String, amount: Schema.String })
export type PaidRow = typeof PaidRow.Type
const TotalRow = Schema.Struct({ total: Schema.NumberFromString })
const IdRow = Schema.Struct({ id: Schema.String })

/**
 * Every statement on `payment_links`. A link's uses and totals are read from the orders it created (and the
 * deposits confirmed for them); those tables stay their own stores' to write. A statement runs in the
 * caller's transaction when it has one.
 */
export class PaymentLinkStore extends Effect.Service<PaymentLinkStore>()("facet/PaymentLinkStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The columns of a link `pl` with its uses (its PAID orders: `orders_payment_link_paid_idx`) and expiry. */
    const withUses = sql`pl.*,
      (SELECT count(*)::int FROM orders o WHERE o.payment_link_id = pl.id AND o.status = 'PAID') AS uses,
      (pl.expires_at IS NOT NULL AND pl.expires_at <= clock_timestamp()) AS expired`

    const insert = (link: NewPaymentLinkRow) =>
      sql`INSERT INTO payment_links ${sql.insert({ ...link })}`.pipe(Effect.asVoid)

    const find = (merchantId: string, linkId: string) =>
      sql`SELECT ${withUses} FROM payment_links pl WHERE pl.id = ${linkId} AND pl.merchant_id = ${merchantId}`.pipe(
        Effect.flatMap(decodeFirst(PaymentLinkRow))
      )

    /** A link by its id alone (its public page), with the merchant's name. */
    const findPublic = (linkId: string) =>
      sql`SELECT ${withUses}, m.project_name AS merchant_name
          FROM payment_links pl JOIN merchants m ON m.id = pl.merchant_id WHERE pl.id = ${linkId}`.pipe(
        Effect.flatMap(decodeFirst(PublicLinkRow))
      )

    /**
     * The link locked FOR UPDATE until the caller's transaction ends, so a visit's check and its order are
     * one step against a deactivation (whose UPDATE waits for it, or it for the UPDATE): no order is created
     * after a deactivation is committed. The link's state is read by a later statement (`find`), once the
     * lock is held: a read in the locking statement would see the snapshot taken before it waited.
     */
    const lockForVisit = (linkId: string) =>
      sql`SELECT id FROM payment_links WHERE id = ${linkId} FOR UPDATE`.pipe(Effect.flatMap(decodeFirst(IdRow)))

    /** A page of a merchant's links, newest first, and how many match in all; `active` keeps those that take visits (or not). */
    const list = Effect.fn("PaymentLinkStore.list")(function* (
      merchantId: string,
      filter: { readonly active?: boolean | undefined },
      page: { readonly limit: number; readonly offset: number }
    ) {
      const takesVisits = sql`(l.deactivated_at IS NULL AND NOT l.expired AND (l.max_uses IS NULL OR l.uses < l.max_uses))`
      const where = filter.active === undefined ? sql`true` : filter.active ? takesVisits : sql`NOT ${takesVisits}`
      const links = sql`(SELECT ${withUses} FROM payment_links pl WHERE pl.merchant_id = ${merchantId}) l`
      const total = yield* sql`SELECT count(*) AS total FROM ${links} WHERE ${where}`.pipe(
        Effect.flatMap(decodeScalar(TotalRow, "total", () => 0))
      )
      const rows = yield* sql`SELECT l.* FROM ${links} WHERE ${where} ORDER BY l.created_at DESC, l.id DESC
            LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(Effect.flatMap(decodeAll(PaymentLinkRow)))
      return { total, rows }
    })

    /** Marks the link deactivated unless it already is: whether this call did. */
    const deactivate = (merchantId: string, linkId: string) =>
      sql`UPDATE payment_links SET deactivated_at = clock_timestamp(), updated_at = clock_timestamp()
          WHERE id = ${linkId} AND merchant_id = ${merchantId} AND deactivated_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0)
      )

    /** How many of each link's orders are in each status. */
    const orderCounts = (linkIds: ReadonlyArray<string>) =>
      linkIds.length === 0
        ? Effect.succeed<ReadonlyArray<StatusCountRow>>([])
        : sql`SELECT payment_link_id AS link_id, status, count(*)::int AS n FROM orders
              WHERE ${sql.in("payment_link_id", linkIds)} GROUP BY payment_link_id, status`.pipe(
            Effect.flatMap(decodeAll(StatusCountRow))
          )

    /** What final deposits brought each link's orders, per asset. */
    const paidTotals = (linkIds: ReadonlyArray<string>) =>
      linkIds.length === 0
        ? Effect.succeed<ReadonlyArray<PaidRow>>([])
        : sql`SELECT o.payment_link_id AS link_id, t.chain, t.currency, sum(t.amount)::text AS amount
              FROM transactions t JOIN orders o ON o.id = t.order_id
              WHERE ${sql.in("o.payment_link_id", linkIds)} AND t.type = 'deposit' AND t.status = 'confirmed'
              GROUP BY o.payment_link_id, t.chain, t.currency ORDER BY t.chain, t.currency`.pipe(
            Effect.flatMap(decodeAll(PaidRow))
          )

    return { insert, find, findPublic, lockForVisit, list, deactivate, orderCounts, paidTotals } as const
  })
}) {}
