import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { CheckoutMode, OrderStatus } from "../domain/order.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

// ---- rows

/** An order, every column. */
export const OrderRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  out_trade_no: Schema.String,
  status: OrderStatus,
  amount: Schema.String,
  paid_amount: Schema.String,
  currency: Schema.String,
  chain: Chain,
  checkout_mode: CheckoutMode,
  exchange_rate: Schema.NullOr(Schema.String),
  pay_address: Schema.String,
  wallet_id: Schema.String,
  notify_url: Schema.NullOr(Schema.String),
  return_url: Schema.NullOr(Schema.String),
  merchant_user_id: Schema.NullOr(Schema.String),
  product_name: Schema.NullOr(Schema.String),
  product_desc: Schema.NullOr(Schema.String),
  metadata: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  tx_hash: Schema.NullOr(Schema.String),
  late_payment: Schema.Boolean,
  /** What a PAID order accepted within its underpayment tolerance still lacks (migration 0033); null: nothing. */
  underpaid_amount: Schema.NullOr(Schema.String),
  expire_at: Schema.DateFromSelf,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf,
  /** The payment link that created the order (null: created by the API). */
  payment_link_id: Schema.NullOr(Schema.String)
})
export type OrderRow = typeof OrderRow.Type

/** One asset an order can be paid in (its position: the order's own first), every column. */
export const OrderAssetRow = Schema.Struct({
  order_id: Schema.String,
  position: Schema.Number,
  chain: Chain,
  currency: Schema.String,
  wallet_id: Schema.String,
  pay_address: Schema.String,
  amount: Schema.String,
  pay_qrcode: Schema.NullOr(Schema.String),
  /** The shortfall this asset allows, in its units, fixed at creation (migration 0033); "0": none. */
  underpayment_tolerance: Schema.String
})
export type OrderAssetRow = typeof OrderAssetRow.Type

/** A new order's columns (the rest take their defaults). */
export interface NewOrderRow {
  readonly id: string
  readonly merchant_id: string
  readonly out_trade_no: string
  readonly status: OrderStatus
  readonly amount: string
  readonly currency: string
  readonly chain: Chain
  readonly checkout_mode: CheckoutMode
  readonly exchange_rate: string | null
  readonly pay_address: string
  readonly wallet_id: string
  readonly notify_url: string | null
  readonly return_url: string | null
  readonly merchant_user_id: string | null
  readonly product_name: string | null
  readonly product_desc: string | null
  /** JSON text. */
  readonly metadata: string | null
  readonly expire_at: Date
  /** The payment link that creates it (left out: an order of the API). */
  readonly payment_link_id?: string
}

/** What the hosted checkout shows of an order, with the merchant's name. */
const CheckoutOrderRow = Schema.Struct({
  id: Schema.String,
  status: OrderStatus,
  amount: Schema.String,
  paid_amount: Schema.String,
  currency: Schema.String,
  checkout_mode: CheckoutMode,
  late_payment: Schema.Boolean,
  underpaid_amount: Schema.NullOr(Schema.String),
  return_url: Schema.NullOr(Schema.String),
  product_name: Schema.NullOr(Schema.String),
  expire_at: Schema.DateFromSelf,
  merchant_name: Schema.String
})
export type CheckoutOrderRow = typeof CheckoutOrderRow.Type

/** What the hosted checkout shows of an order's asset. */
const CheckoutAssetRow = Schema.Struct({
  chain: Chain,
  currency: Schema.String,
  amount: Schema.String,
  pay_address: Schema.String,
  pay_qrcode: Schema.NullOr(Schema.String)
})
export type CheckoutAssetRow = typeof CheckoutAssetRow.Type

/** What settling an order's payments starts from (the order locked). */
const SettlementRow = Schema.Struct({
  status: OrderStatus,
  late_payment: Schema.Boolean,
  expire_at: Schema.DateFromSelf,
  expired: Schema.Boolean,
  amount: Schema.String,
  /** The order currency's amount precision (its asset policy on the order's chain). */
  digits: Schema.NullOr(Schema.Number)
})
export type SettlementRow = typeof SettlementRow.Type

/** An asset of the order, what it asks and the shortfall it allows. */
const AskedRow = Schema.Struct({
  chain: Schema.String,
  currency: Schema.String,
  asked: Schema.String,
  tolerance: Schema.String
})
export type AskedRow = typeof AskedRow.Type

/** An order's asset by its receive wallet, with the order's amount (what a payment to it is worth). */
const WalletAssetRow = Schema.Struct({
  order_id: Schema.String,
  wallet_id: Schema.String,
  currency: Schema.String,
  asset_amount: Schema.String,
  order_amount: Schema.String
})
export type WalletAssetRow = typeof WalletAssetRow.Type

const TotalRow = Schema.Struct({ total: Schema.NumberFromString })
const CountRow = Schema.Struct({ n: Schema.Number })
const SettledRow = Schema.Struct({ open: Schema.Number, total: Schema.Number })

/**
 * Every statement on checkout orders: `orders` and `order_assets` (the assets and networks each order can be
 * paid in, with its own receive wallet and pay address per network). A statement runs in the caller's
 * transaction when it has one.
 */
export class OrderStore extends Effect.Service<OrderStore>()("facet/OrderStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // ---- the API's orders

    const find = (merchantId: string, orderId: string) =>
      sql`SELECT * FROM orders WHERE id = ${orderId} AND merchant_id = ${merchantId}`.pipe(
        Effect.flatMap(decodeFirst(OrderRow))
      )

    /** A merchant's order, locked FOR UPDATE until the caller's transaction ends (refunds of it queue on it). */
    const lockOwned = (merchantId: string, orderId: string) =>
      sql`SELECT * FROM orders WHERE id = ${orderId} AND merchant_id = ${merchantId} FOR UPDATE`.pipe(
        Effect.flatMap(decodeFirst(OrderRow))
      )

    /** The assets of these orders, by order and position. */
    const assetsOf = (orderIds: ReadonlyArray<string>) =>
      sql`SELECT * FROM order_assets WHERE ${sql.in("order_id", orderIds)} ORDER BY order_id, position`.pipe(
        Effect.flatMap(decodeAll(OrderAssetRow))
      )

    /** A new order and its assets (two statements: the caller's transaction makes them one). */
    const insert = (order: NewOrderRow, assets: ReadonlyArray<OrderAssetRow>) =>
      Effect.zipRight(
        sql`INSERT INTO orders ${sql.insert({ ...order })}`,
        sql`INSERT INTO order_assets ${sql.insert(assets.map((asset) => ({ ...asset })))}`
      ).pipe(Effect.asVoid)

    /** A page of a merchant's orders, newest first, and how many match in all. */
    const list = Effect.fn("OrderStore.list")(function* (
      merchantId: string,
      filter: {
        readonly status?: OrderStatus | undefined
        readonly chain?: Chain | undefined
        readonly paymentLinkId?: string | undefined
      },
      page: { readonly limit: number; readonly offset: number }
    ) {
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`]),
        ...(filter.chain === undefined ? [] : [sql`chain = ${filter.chain}`]),
        ...(filter.paymentLinkId === undefined ? [] : [sql`payment_link_id = ${filter.paymentLinkId}`])
      ])
      const total = yield* sql`SELECT count(*) AS total FROM orders WHERE ${where}`.pipe(
        Effect.flatMap(decodeScalar(TotalRow, "total", () => 0))
      )
      const rows = yield* sql`SELECT * FROM orders WHERE ${where} ORDER BY created_at DESC, id DESC
            LIMIT ${page.limit} OFFSET ${page.offset}`.pipe(Effect.flatMap(decodeAll(OrderRow)))
      return { total, rows }
    })

    /**
     * Moves up to `batchSize` PENDING orders whose time is up (past expire_at, and on every chain they can be
     * paid on: migration 0009) to EXPIRED (nothing confirmed) or PARTIALLY_PAID; the orders moved. Decided from
     * the confirmed rows that count, as settlement decides (src/orders/order-settlement.ts), never from
     * `paid_amount`, which is rounded down at the order currency's precision (a converted payment worth less than
     * it shows 0). SKIP LOCKED lets several processes share the work; the status condition makes each
     * transition happen once.
     */
    const expireDue = (batchSize: number) =>
      sql`
            WITH due AS (
              SELECT id FROM orders WHERE status = 'PENDING' AND expire_at <= now() AND order_time_is_up(id, expire_at)
              ORDER BY expire_at LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
            )
            UPDATE orders o
               SET status = CASE WHEN EXISTS (
                     SELECT 1 FROM transactions t
                     WHERE t.order_id = o.id AND t.type = 'deposit' AND t.counted AND t.status = 'confirmed'
                   ) THEN 'PARTIALLY_PAID' ELSE 'EXPIRED' END,
                   updated_at = clock_timestamp()
              FROM due WHERE o.id = due.id
            RETURNING o.*`.pipe(Effect.flatMap(decodeAll(OrderRow)))

    // ---- the hosted checkout (by order id alone)

    const checkoutOrder = (orderId: string) =>
      sql`
        SELECT o.id, o.status, o.amount::text AS amount, o.paid_amount::text AS paid_amount, o.currency, o.checkout_mode,
               o.late_payment, o.underpaid_amount::text AS underpaid_amount, o.return_url, o.product_name, o.expire_at, m.project_name AS merchant_name
        FROM orders o JOIN merchants m ON m.id = o.merchant_id WHERE o.id = ${orderId}`.pipe(
        Effect.flatMap(decodeFirst(CheckoutOrderRow))
      )

    const checkoutAssets = (orderId: string) =>
      sql`
        SELECT chain, currency, amount::text AS amount, pay_address, pay_qrcode FROM order_assets WHERE order_id = ${orderId} ORDER BY position`.pipe(
        Effect.flatMap(decodeAll(CheckoutAssetRow))
      )

    // ---- settlement by the indexers (inside their block's transaction)

    /**
     * The order, locked FOR UPDATE until the caller's transaction ends: whoever settles it next waits and
     * then reads the payments this one wrote.
     */
    const lockForSettlement = (orderId: string) =>
      sql`
          SELECT o.status, o.late_payment, o.expire_at, order_time_is_up(o.id, o.expire_at) AS expired, o.amount::text AS amount,
                 (SELECT p.amount_precision FROM wallet_asset_policies p WHERE p.chain = o.chain AND p.currency = o.currency) AS digits
          FROM orders o WHERE o.id = ${orderId} FOR UPDATE OF o`.pipe(Effect.flatMap(decodeFirst(SettlementRow)))

    /** What each of the order's assets asks, and the shortfall it allows. */
    const askedAssets = (orderId: string) =>
      sql`
          SELECT chain, currency, amount::text AS asked, underpayment_tolerance::text AS tolerance
          FROM order_assets WHERE order_id = ${orderId} ORDER BY position`.pipe(Effect.flatMap(decodeAll(AskedRow)))

    /**
     * The order's status and paid total as its payments make them (`paidAmount` a decimal string), and what a
     * PAID order accepted within its tolerance still lacks (null: nothing).
     */
    const writeSettlement = (
      orderId: string,
      settled: {
        readonly status: OrderStatus
        readonly txHash: string | null
        readonly latePayment: boolean
        readonly paidAmount: string
        readonly underpaidAmount: string | null
      }
    ) =>
      sql`UPDATE orders SET status = ${settled.status}, tx_hash = ${settled.txHash}, late_payment = ${settled.latePayment},
                     paid_amount = ${settled.paidAmount}::numeric, underpaid_amount = ${settled.underpaidAmount}::numeric,
                     updated_at = clock_timestamp()
                   WHERE id = ${orderId}`.pipe(Effect.asVoid)

    /** The order assets paid into these receive wallets on a chain, with their order's amount (none asked: none). */
    const assetsOfWallets = (chain: Chain, walletIds: ReadonlyArray<string>) =>
      walletIds.length === 0
        ? Effect.succeed<ReadonlyArray<WalletAssetRow>>([])
        : sql`SELECT oa.order_id, oa.wallet_id, oa.currency, oa.amount::text AS asset_amount, o.amount::text AS order_amount
           FROM order_assets oa JOIN orders o ON o.id = oa.order_id
           WHERE oa.chain = ${chain} AND ${sql.in("oa.wallet_id", walletIds)}`.pipe(
            Effect.flatMap(decodeAll(WalletAssetRow))
          )

    // ---- devnet reset

    /** Every order back to unpaid (EXPIRED when its time is up, else PENDING): how many changed. */
    const resetToUnpaid = sql`
      WITH u AS (
        UPDATE orders SET paid_amount = 0, tx_hash = NULL, late_payment = false, underpaid_amount = NULL,
          updated_at = clock_timestamp(),
          status = CASE WHEN expire_at <= now() THEN 'EXPIRED' ELSE 'PENDING' END
        WHERE paid_amount <> 0 OR tx_hash IS NOT NULL OR status NOT IN ('PENDING', 'EXPIRED')
        RETURNING 1)
      SELECT count(*)::int AS n FROM u`.pipe(Effect.flatMap(decodeScalar(CountRow, "n", () => 0)))

    /**
     * Whether every order paid at this receive wallet (as its address, or one of its assets') is settled —
     * PAID, EXPIRED or PARTIALLY_PAID (expired with something paid) — and there is one: a one-time address that
     * no order still waits on.
     */
    const settledAt = (walletId: string) =>
      sql`
        SELECT count(*) FILTER (WHERE o.status NOT IN ('PAID', 'EXPIRED', 'PARTIALLY_PAID'))::int AS open,
               count(*)::int AS total
        FROM orders o
        WHERE o.wallet_id = ${walletId}
           OR EXISTS (SELECT 1 FROM order_assets oa WHERE oa.order_id = o.id AND oa.wallet_id = ${walletId})`.pipe(
        Effect.flatMap(decodeFirst(SettledRow)),
        Effect.map(Option.exists((row) => row.total > 0 && row.open === 0))
      )

    return {
      settledAt,
      find,
      lockOwned,
      assetsOf,
      insert,
      list,
      expireDue,
      checkoutOrder,
      checkoutAssets,
      lockForSettlement,
      askedAssets,
      writeSettlement,
      assetsOfWallets,
      resetToUnpaid
    } as const
  })
}) {}
