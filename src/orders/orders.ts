import { SqlClient } from "@effect/sql"
import { Array as Arr, DateTime, Effect, Either, Option } from "effect"
import { AssetCatalog } from "../assets/asset-catalog.js"
import { ChainSettings } from "../assets/chain-settings.js"
import { AppConfig } from "../config.js"
import type { Chain } from "../domain/chain.js"
import type { CreateOrderRequest, Order, OrderStatus } from "../domain/order.js"
import { Idempotency, requestHash } from "../idempotency.js"
import { newId } from "../ids.js"
import { normalizeDecimal } from "../money.js"
import { InvalidOrderRequest, OrderNotFound } from "./order-errors.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { Wallets } from "../wallets/wallets.js"
import { OrderStore, type OrderRow } from "../stores/order-store.js"
import { orderEventKey } from "../stores/webhook-store.js"
import { type OutboxEvent, WebhookOutbox } from "../webhooks/outbox.js"
import { priceOrder } from "./order-pricing.js"
import { settingOf, toleranceFor } from "./underpayment-tolerance.js"
import { refundedValue, renderOrder } from "./order-view.js"
import { RefundStore } from "../stores/refund-store.js"
import { paymentUri } from "./payment-uri.js"

const CREATE_ENDPOINT = "POST /v1/orders"

/** What makes two creation requests "the same" for idempotency: values, not spelling. */
const normalizeRequest = (request: CreateOrderRequest) => ({
  ...request,
  amount: normalizeDecimal(request.amount),
  exchange_rate: request.exchange_rate === undefined ? undefined : normalizeDecimal(request.exchange_rate),
  currency: request.currency?.trim().toUpperCase(),
  accepted_assets: request.accepted_assets?.map((a) => ({ chain: a.chain, currency: a.currency.trim().toUpperCase() }))
})

export interface OrderListFilter {
  readonly page: number
  readonly size: number
  readonly status?: OrderStatus | undefined
  readonly chain?: Chain | undefined
  /** Only the orders created by this payment link. */
  readonly paymentLinkId?: string | undefined
}

/** Checkout orders: creation (idempotent), reads, and expiry with its webhook events. */
export class Orders extends Effect.Service<Orders>()("facet/Orders", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const catalog = yield* AssetCatalog
    const chains = yield* ChainSettings
    const wallets = yield* Wallets
    const idempotency = yield* Idempotency
    const outbox = yield* WebhookOutbox
    const merchants = yield* MerchantStore
    const store = yield* OrderStore
    const refundStore = yield* RefundStore

    const render = (rows: ReadonlyArray<OrderRow>) =>
      Effect.gen(function* () {
        if (rows.length === 0) return []
        const assets = Arr.groupBy(yield* store.assetsOf(rows.map((r) => r.id)), (a) => a.order_id)
        const refunds = Arr.groupBy(yield* refundStore.heldTotals(rows.map((r) => r.id)), (t) => t.order_id)
        const refunded = new Map<string, string>()
        for (const row of rows) {
          const held = refunds[row.id]
          if (held === undefined) continue
          // at the order currency's precision, as paid_amount is
          const policy = yield* catalog.policy(row.merchant_id, row.chain, row.currency)
          const digits = Option.match(policy, { onNone: () => 18, onSome: (p) => p.amount_precision })
          refunded.set(row.id, refundedValue(row.amount, assets[row.id] ?? [], held, digits))
        }
        return rows.map((row) => renderOrder(row, assets[row.id] ?? [], config.baseUrl, refunded.get(row.id)))
      })

    const get = Effect.fn("Orders.get")(function* (merchantId: string, orderId: string) {
      const row = yield* Effect.orDie(store.find(merchantId, orderId))
      if (Option.isNone(row)) return yield* new OrderNotFound({ orderId })
      const [order] = yield* Effect.orDie(render([row.value]))
      return yield* Effect.fromNullable(order).pipe(Effect.orDie)
    })

    const create = Effect.fn("Orders.create")(function* (
      merchantId: string,
      request: CreateOrderRequest,
      idempotencyKey: Option.Option<string>,
      /** The payment link whose visit creates the order (its caller holds the link's lock). */
      origin?: { readonly paymentLinkId: string }
    ) {
      const pricing = priceOrder(request, yield* catalog.policies(merchantId))
      if (Either.isLeft(pricing)) return yield* new InvalidOrderRequest({ reason: pricing.left })
      const { assets, chain, checkoutMode, currency } = pricing.right
      // the merchant its API key resolved to is gone: a defect
      const merchant = yield* Effect.orDie(Effect.flatten(merchants.orderMerchant(merchantId)))
      const orderId = newId("ord")
      const expireAt = DateTime.add(yield* DateTime.now, { minutes: request.expire_minutes ?? 15 })

      const outcome = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (Option.isSome(idempotencyKey)) {
              const replay = yield* idempotency.claim({
                merchantId,
                endpoint: CREATE_ENDPOINT,
                key: idempotencyKey.value,
                requestHash: requestHash(normalizeRequest(request)),
                resourceId: orderId,
                statusCode: 201
              })
              if (Option.isSome(replay)) return { orderId: replay.value.resourceId, status: replay.value.statusCode }
            }
            // every order gets fresh addresses, one per network it can be paid on, never reused
            const networks = [...new Set(assets.map((a) => a.policy.chain))]
            const created = yield* wallets.createReceive(
              merchantId,
              merchant.key_account,
              networks.map((network) => ({ network, purpose: "order" }))
            )
            const walletOf = new Map(created.map((w) => [w.network, w]))
            const assetRowsToInsert = assets.map((asset, position) => {
              const wallet = walletOf.get(asset.policy.chain)
              if (wallet === undefined) throw new Error(`no wallet allocated for ${asset.policy.chain}`)
              const uri = paymentUri(
                asset.policy,
                wallet.address,
                asset.amount,
                chains.tokenContract(asset.policy),
                chains.bep20ChainId
              )
              return {
                order_id: orderId,
                position,
                chain: asset.policy.chain,
                currency: asset.policy.currency,
                wallet_id: wallet.id,
                pay_address: wallet.address,
                amount: asset.amount,
                pay_qrcode: Option.getOrNull(uri),
                // the merchant's tolerance as it stands now: a later change leaves this order as it is
                underpayment_tolerance: toleranceFor(
                  asset.amount,
                  settingOf(asset.policy),
                  asset.policy.amount_precision
                )
              }
            })
            const primary = assetRowsToInsert[0]
            if (primary === undefined) return yield* Effect.die(new Error("an order without assets"))
            yield* store.insert(
              {
                id: orderId,
                merchant_id: merchantId,
                out_trade_no: request.out_trade_no ?? "",
                status: "PENDING",
                amount: request.amount,
                currency,
                chain,
                checkout_mode: checkoutMode,
                exchange_rate: request.exchange_rate ?? null,
                pay_address: primary.pay_address,
                wallet_id: primary.wallet_id,
                notify_url: request.notify_url ?? null,
                return_url: request.return_url ?? null,
                merchant_user_id: request.merchant_user_id ?? null,
                product_name: request.product_name ?? null,
                product_desc: request.product_desc ?? null,
                metadata: request.metadata === undefined ? null : JSON.stringify(request.metadata),
                expire_at: DateTime.toDate(expireAt),
                ...(origin === undefined ? {} : { payment_link_id: origin.paymentLinkId })
              },
              assetRowsToInsert
            )
            return { orderId, status: 201 }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      const order = yield* get(merchantId, outcome.orderId)
      if (outcome.orderId === orderId) {
        yield* Effect.logInfo("order created").pipe(Effect.annotateLogs({ order_id: orderId, merchant_id: merchantId }))
      }
      return { status: outcome.status, order }
    })

    const list = Effect.fn("Orders.list")(function* (merchantId: string, filter: OrderListFilter) {
      const { total, rows } = yield* Effect.orDie(
        store.list(
          merchantId,
          { status: filter.status, chain: filter.chain, paymentLinkId: filter.paymentLinkId },
          { limit: filter.size, offset: (filter.page - 1) * filter.size }
        )
      )
      return {
        total,
        page: filter.page,
        size: filter.size,
        items: yield* Effect.orDie(render(rows))
      }
    })

    /**
     * Moves PENDING orders whose time is up (past expire_at, and on every chain they can be paid on:
     * migration 0009) to EXPIRED (nothing confirmed) or PARTIALLY_PAID, with their
     * `order.updated` events, in one transaction. SKIP LOCKED lets several processes share the work;
     * the status condition makes each transition happen once.
     */
    const expireDue = Effect.fn("Orders.expireDue")(function* (batchSize: number) {
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const expired = yield* store.expireDue(batchSize)
            if (expired.length === 0) return 0
            const hookOf = yield* merchants.webhookUrls(expired.map((o) => o.merchant_id))
            const orders = yield* render(expired)
            const now = DateTime.formatIso(yield* DateTime.now)
            for (const [i, order] of orders.entries()) {
              const row = expired[i]
              if (row === undefined) continue
              yield* outbox.enqueue(orderEvent(row, order, now, hookOf.get(row.merchant_id) ?? null))
            }
            return expired.length
          })
        )
        .pipe(Effect.orDie)
    })

    return { create, get, list, expireDue } as const
  }),
  dependencies: [
    AssetCatalog.Default,
    MerchantStore.Default,
    OrderStore.Default,
    RefundStore.Default,
    Wallets.Default,
    Idempotency.Default,
    WebhookOutbox.Default
  ]
}) {}

/** `order.updated` for a status change that is not a chain event (the fallback key format). */
const orderEvent = (row: OrderRow, order: Order, now: string, merchantWebhook: string | null): OutboxEvent => {
  const bodyEvent = order.status === "PARTIALLY_PAID" ? "order.partially_paid" : "order.expired"
  return {
    merchantId: row.merchant_id,
    event: "order.updated",
    idempotencyKey: orderEventKey(order.order_id, bodyEvent, order.status),
    orderId: order.order_id,
    destination: row.notify_url ?? merchantWebhook,
    body: { event: bodyEvent, order, created_at: now }
  }
}
