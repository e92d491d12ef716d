import { SqlClient } from "@effect/sql"
import { Array as Arr, DateTime, Effect, Either, Option, Schema } from "effect"
import { AssetCatalog } from "../assets/asset-catalog.js"
import { type AuditActor, AuditLog } from "../audit/audit-log.js"
import { AppConfig } from "../config.js"
import type { AssetPolicy } from "../domain/asset-policy.js"
import type { Chain } from "../domain/chain.js"
import type { CreateOrderRequest } from "../domain/order.js"
import type {
  CreatePaymentLinkRequest,
  PayForm,
  PaymentLink,
  PaymentLinkStatus,
  PaymentLinkTotals
} from "../domain/payment-link.js"
import { Idempotency, requestHash } from "../idempotency.js"
import { newId } from "../ids.js"
import { MoneyDecimal, normalizeDecimal, RequestAmount } from "../money.js"
import { NETWORK_NAMES } from "../orders/checkout.js"
import { checkoutRefusal, priceOrder } from "../orders/order-pricing.js"
import { type OrderListFilter, Orders } from "../orders/orders.js"
import {
  type PaidRow,
  type PaymentLinkRow,
  PaymentLinkStore,
  type StatusCountRow
} from "../stores/payment-link-store.js"
import {
  InvalidPaymentLinkRequest,
  InvalidPaymentLinkVisit,
  PaymentLinkClosed,
  PaymentLinkNotFound
} from "./payment-link-errors.js"

const CREATE_ENDPOINT = "POST /v1/payment-links"
const DEFAULT_ORDER_EXPIRE_MINUTES = 15

/** Why a link takes no visit, in the words its public page shows. */
const CLOSED_REASONS = {
  inactive: "This payment link has been turned off by the merchant.",
  completed: "This payment link has reached its limit of payments.",
  expired: "This payment link has expired.",
  unpayable: "This payment link cannot take payments right now."
} as const

/**
 * Deactivated, then every use taken (its PAID orders reached `max_uses`), then past its expiry: the first
 * that holds is the link's status. Visits and unpaid orders never count: a visitor cannot close a link.
 */
export const linkStatus = (row: PaymentLinkRow): PaymentLinkStatus =>
  row.deactivated_at !== null
    ? "inactive"
    : row.max_uses !== null && row.uses >= row.max_uses
      ? "completed"
      : row.expired
        ? "expired"
        : "active"

const iso = (date: Date) => DateTime.formatIso(DateTime.unsafeFromDate(date))

const totalsOf = (counts: ReadonlyArray<StatusCountRow>, paid: ReadonlyArray<PaidRow>): PaymentLinkTotals => ({
  orders: {
    PENDING: 0,
    CONFIRMING: 0,
    PAID: 0,
    PARTIALLY_PAID: 0,
    EXPIRED: 0,
    ...Object.fromEntries(counts.map((c) => [c.status, c.n]))
  },
  paid: paid.map((p) => ({
    asset_key: `${p.chain}-${p.currency}`,
    chain: p.chain,
    currency: p.currency,
    amount: normalizeDecimal(p.amount)
  }))
})

/** The PaymentLink resource as the API shows it. */
const renderLink = (row: PaymentLinkRow, totals: PaymentLinkTotals, baseUrl: string): PaymentLink => {
  const status = linkStatus(row)
  return {
    payment_link_id: row.id,
    url: `${baseUrl}/pay/${row.id}`,
    status,
    active: status === "active",
    product_name: row.product_name,
    ...(row.product_desc === null ? {} : { product_desc: row.product_desc }),
    ...(row.amount === null ? {} : { amount: normalizeDecimal(row.amount) }),
    ...(row.min_amount === null ? {} : { min_amount: normalizeDecimal(row.min_amount) }),
    ...(row.max_amount === null ? {} : { max_amount: normalizeDecimal(row.max_amount) }),
    currency: row.currency,
    ...(row.chain === null ? {} : { chain: row.chain }),
    ...(row.checkout_mode === null ? {} : { checkout_mode: row.checkout_mode }),
    ...(row.accepted_assets === null ? {} : { accepted_assets: row.accepted_assets }),
    ...(row.max_uses === null ? {} : { max_uses: row.max_uses }),
    uses: row.uses,
    ...(row.expires_at === null ? {} : { expires_at: iso(row.expires_at) }),
    order_expire_minutes: row.order_expire_minutes,
    ...(row.return_url === null ? {} : { return_url: row.return_url }),
    ...(row.notify_url === null ? {} : { notify_url: row.notify_url }),
    ...(row.metadata === null ? {} : { metadata: row.metadata }),
    totals,
    ...(row.deactivated_at === null ? {} : { deactivated_at: iso(row.deactivated_at) }),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at)
  }
}

/** What the link's orders are priced by: its currency and its choice of assets. */
interface LinkTerms {
  readonly currency: string | undefined
  readonly chain: Chain | undefined
  readonly checkout_mode: "single_asset" | "multi_asset" | undefined
  readonly accepted_assets: ReadonlyArray<{ readonly chain: Chain; readonly currency: string }> | undefined
}

const termsOf = (row: PaymentLinkRow): LinkTerms => ({
  currency: row.currency,
  chain: row.chain ?? undefined,
  checkout_mode: row.checkout_mode ?? undefined,
  accepted_assets: row.accepted_assets ?? undefined
})

/** An asset a visitor may pick on the link's page. */
export interface PayableAsset {
  readonly key: string
  readonly chain: Chain
  readonly currency: string
  readonly network: string
}

/**
 * The assets the link's orders can be paid in now, by the merchant's policies of now: an asset listed by
 * the link that is no longer live (or no longer enabled) is left out; none left, or none matching, and the
 * link cannot take a payment (Left: why).
 */
const payableAssets = (
  row: PaymentLinkRow,
  policies: ReadonlyArray<AssetPolicy>
): Either.Either<ReadonlyArray<PayableAsset>, string> => {
  const byKey = new Map(policies.map((p) => [p.asset_key, p]))
  const terms = termsOf(row)
  const accepted = terms.accepted_assets?.filter(
    (a) => checkoutRefusal(`${a.chain}-${a.currency}`, byKey.get(`${a.chain}-${a.currency}`)) === undefined
  )
  if (accepted !== undefined && accepted.length === 0) return Either.left("none of the link's assets is live now")
  const reference = row.amount ?? row.min_amount ?? row.max_amount ?? "1"
  const priced = priceOrder(orderRequest(terms, reference, accepted), policies)
  return Either.map(priced, (pricing) =>
    pricing.assets.map(({ policy }) => ({
      key: policy.asset_key,
      chain: policy.chain,
      currency: policy.currency,
      network: NETWORK_NAMES[policy.chain]
    }))
  )
}

/** An order request of the link's terms for this amount (the accepted assets given: those still usable). */
const orderRequest = (
  terms: LinkTerms,
  amount: string,
  accepted: LinkTerms["accepted_assets"]
): CreateOrderRequest => ({
  amount,
  ...(terms.currency === undefined ? {} : { currency: terms.currency }),
  ...(terms.chain === undefined ? {} : { chain: terms.chain }),
  ...(terms.checkout_mode === undefined ? {} : { checkout_mode: terms.checkout_mode }),
  ...(accepted === undefined ? {} : { accepted_assets: accepted })
})

/** What makes two creation requests "the same" for idempotency: values, not spelling. */
const normalizeRequest = (request: CreatePaymentLinkRequest) => ({
  ...request,
  amount: request.amount === undefined ? undefined : normalizeDecimal(request.amount),
  min_amount: request.min_amount === undefined ? undefined : normalizeDecimal(request.min_amount),
  max_amount: request.max_amount === undefined ? undefined : normalizeDecimal(request.max_amount),
  currency: request.currency?.trim().toUpperCase(),
  accepted_assets: request.accepted_assets?.map((a) => ({ chain: a.chain, currency: a.currency.trim().toUpperCase() })),
  expires_at: request.expires_at === undefined ? undefined : new Date(request.expires_at).toISOString()
})

/** The price as words: `12.5 USDT`, `5 to 500 USDT`, `at least 5 USDT`, `up to 500 USDT`. */
export const priceWords = (link: {
  readonly amount?: string | undefined
  readonly min_amount?: string | undefined
  readonly max_amount?: string | undefined
  readonly currency: string
}) =>
  link.amount !== undefined
    ? `${link.amount} ${link.currency}`
    : link.min_amount !== undefined && link.max_amount !== undefined
      ? `${link.min_amount} to ${link.max_amount} ${link.currency}`
      : link.min_amount !== undefined
        ? `at least ${link.min_amount} ${link.currency}`
        : `up to ${link.max_amount ?? "?"} ${link.currency}`

/** What the public page of a link shows a visitor: no merchant id, key or other link. */
export interface PaymentLinkPage {
  readonly paymentLinkId: string
  readonly merchantName: string
  readonly productName: string
  readonly productDesc: string | null
  readonly amount: string | undefined
  readonly minAmount: string | undefined
  readonly maxAmount: string | undefined
  readonly currency: string
  readonly assets: ReadonlyArray<PayableAsset>
  /** Why the link takes no visit now (none: it does). */
  readonly closed: Option.Option<PaymentLinkClosed>
}

/** A link as its public page read it: what the page shows, and the row a visit goes on from. */
export interface LoadedLink {
  readonly view: PaymentLinkPage
  readonly row: PaymentLinkRow
}

const decodeAmount = Schema.decodeUnknownEither(RequestAmount)

export interface PaymentLinkListFilter {
  readonly limit: number
  readonly offset: number
  readonly active?: boolean | undefined
}

/**
 * Payment links: reusable hosted pages that create a checkout order per visit, through `Orders.create`
 * (its own addresses, its own expiry, the link's id on it). A use is a PAID order of the link, never a visit:
 * anonymous visits, however many, cannot close a link to paying customers. Once the paid orders reach
 * `max_uses` the link takes no more visits; orders opened before then keep their window and are honoured when
 * paid, so `uses` can pass `max_uses` (docs/guides/payment-links.md says what the merchant sees). A refused
 * visit creates nothing.
 */
export class PaymentLinks extends Effect.Service<PaymentLinks>()("facet/PaymentLinks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const catalog = yield* AssetCatalog
    const orders = yield* Orders
    const idempotency = yield* Idempotency
    const audit = yield* AuditLog
    const store = yield* PaymentLinkStore

    const render = (rows: ReadonlyArray<PaymentLinkRow>) =>
      Effect.gen(function* () {
        if (rows.length === 0) return []
        const ids = rows.map((r) => r.id)
        const counts = Arr.groupBy(yield* store.orderCounts(ids), (c) => c.link_id)
        const paid = Arr.groupBy(yield* store.paidTotals(ids), (p) => p.link_id)
        return rows.map((row) => renderLink(row, totalsOf(counts[row.id] ?? [], paid[row.id] ?? []), config.baseUrl))
      })

    const found = (merchantId: string, linkId: string) =>
      Effect.flatMap(Effect.orDie(store.find(merchantId, linkId)), (row) =>
        Option.match(row, {
          onNone: () => Effect.fail(new PaymentLinkNotFound({ paymentLinkId: linkId })),
          onSome: Effect.succeed
        })
      )

    const get = Effect.fn("PaymentLinks.get")(function* (merchantId: string, linkId: string) {
      const [link] = yield* Effect.orDie(render([yield* found(merchantId, linkId)]))
      return yield* Effect.fromNullable(link).pipe(Effect.orDie)
    })

    /** The request checked against the merchant's live assets, at each asset's precision: the link's currency. */
    const validate = Effect.fn("PaymentLinks.validate")(function* (
      merchantId: string,
      request: CreatePaymentLinkRequest
    ) {
      const invalid = (reason: string) => new InvalidPaymentLinkRequest({ reason })
      const bounded = request.min_amount !== undefined || request.max_amount !== undefined
      if (request.amount !== undefined && bounded)
        return yield* invalid(
          "give either amount (a fixed price) or min_amount/max_amount (the customer chooses), not both"
        )
      if (request.amount === undefined && !bounded)
        return yield* invalid("give amount (a fixed price), or min_amount and/or max_amount (the customer chooses)")
      if (
        request.min_amount !== undefined &&
        request.max_amount !== undefined &&
        new MoneyDecimal(request.min_amount).greaterThan(request.max_amount)
      )
        return yield* invalid("min_amount must not be greater than max_amount")
      if (
        request.expires_at !== undefined &&
        Date.parse(request.expires_at) <= DateTime.toEpochMillis(yield* DateTime.now)
      )
        return yield* invalid("expires_at must be in the future")
      const currencies = new Set(
        [request.currency, ...(request.accepted_assets ?? []).map((a) => a.currency)].flatMap((c) =>
          c === undefined ? [] : [c.trim().toUpperCase()]
        )
      )
      if (currencies.size > 1)
        return yield* invalid(
          `a payment link is priced in one currency, and its currency and accepted_assets name ${[...currencies].join(", ")}`
        )
      const terms: LinkTerms = {
        currency: request.currency,
        chain: request.chain,
        checkout_mode: request.checkout_mode,
        accepted_assets: request.accepted_assets
      }
      const policies = yield* catalog.policies(merchantId)
      let currency: string | undefined
      for (const [field, value] of [
        ["amount", request.amount],
        ["min_amount", request.min_amount],
        ["max_amount", request.max_amount]
      ] as const) {
        if (value === undefined) continue
        const priced = priceOrder(orderRequest(terms, value, terms.accepted_assets), policies)
        if (Either.isLeft(priced)) return yield* invalid(`${field}: ${priced.left}`)
        const foreign = priced.right.assets.find((a) => a.policy.currency !== priced.right.currency)
        if (foreign !== undefined)
          return yield* invalid(
            `a payment link is priced in one currency (${priced.right.currency}): ${foreign.policy.asset_key} is in another`
          )
        currency = priced.right.currency
      }
      return yield* Effect.fromNullable(currency).pipe(Effect.orDie)
    })

    const create = Effect.fn("PaymentLinks.create")(function* (
      merchantId: string,
      request: CreatePaymentLinkRequest,
      idempotencyKey: Option.Option<string>,
      actor: AuditActor
    ) {
      const currency = yield* validate(merchantId, request)
      const linkId = newId("plink")
      const outcome = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            if (Option.isSome(idempotencyKey)) {
              const replay = yield* idempotency.claim({
                merchantId,
                endpoint: CREATE_ENDPOINT,
                key: idempotencyKey.value,
                requestHash: requestHash(normalizeRequest(request)),
                resourceId: linkId,
                statusCode: 201
              })
              if (Option.isSome(replay)) return { linkId: replay.value.resourceId, status: replay.value.statusCode }
            }
            yield* store.insert({
              id: linkId,
              merchant_id: merchantId,
              product_name: request.product_name.trim(),
              product_desc: request.product_desc ?? null,
              amount: request.amount === undefined ? null : normalizeDecimal(request.amount),
              min_amount: request.min_amount === undefined ? null : normalizeDecimal(request.min_amount),
              max_amount: request.max_amount === undefined ? null : normalizeDecimal(request.max_amount),
              currency,
              chain: request.chain ?? null,
              checkout_mode: request.checkout_mode ?? null,
              accepted_assets:
                request.accepted_assets === undefined
                  ? null
                  : JSON.stringify(
                      request.accepted_assets.map((a) => ({
                        chain: a.chain,
                        currency: a.currency.trim().toUpperCase()
                      }))
                    ),
              max_uses: request.max_uses ?? null,
              expires_at: request.expires_at === undefined ? null : new Date(request.expires_at),
              order_expire_minutes: request.order_expire_minutes ?? DEFAULT_ORDER_EXPIRE_MINUTES,
              return_url: request.return_url ?? null,
              notify_url: request.notify_url ?? null,
              metadata: request.metadata === undefined ? null : JSON.stringify(request.metadata)
            })
            const price = priceWords({ ...request, currency })
            yield* audit.record(
              merchantId,
              actor,
              "payment_link.created",
              linkId,
              `${request.product_name.trim()}: ${price}${request.max_uses === undefined ? "" : `, at most ${request.max_uses} use(s)`}${request.expires_at === undefined ? "" : `, until ${request.expires_at}`}`
            )
            return { linkId, status: 201 }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      const link = yield* get(merchantId, outcome.linkId).pipe(Effect.catchTag("PaymentLinkNotFound", Effect.die))
      if (outcome.linkId === linkId) {
        yield* Effect.logInfo("payment link created").pipe(
          Effect.annotateLogs({ payment_link_id: linkId, merchant_id: merchantId })
        )
      }
      return { status: outcome.status, link }
    })

    const list = Effect.fn("PaymentLinks.list")(function* (merchantId: string, filter: PaymentLinkListFilter) {
      const { total, rows } = yield* Effect.orDie(
        store.list(merchantId, { active: filter.active }, { limit: filter.limit, offset: filter.offset })
      )
      return { total, limit: filter.limit, offset: filter.offset, items: yield* Effect.orDie(render(rows)) }
    })

    /** Turns the link off for good (idempotent: a second call changes nothing and logs nothing). */
    const deactivate = Effect.fn("PaymentLinks.deactivate")(function* (
      merchantId: string,
      linkId: string,
      actor: AuditActor
    ) {
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const row = yield* found(merchantId, linkId)
            if (yield* store.deactivate(merchantId, linkId)) {
              yield* audit.record(merchantId, actor, "payment_link.deactivated", linkId, row.product_name)
            }
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      return yield* get(merchantId, linkId)
    })

    /** The orders a link created, newest first (the OrderList of `GET /v1/orders`). */
    const ordersOf = Effect.fn("PaymentLinks.ordersOf")(function* (
      merchantId: string,
      linkId: string,
      filter: Omit<OrderListFilter, "paymentLinkId">
    ) {
      yield* found(merchantId, linkId)
      return yield* orders.list(merchantId, { ...filter, paymentLinkId: linkId })
    })

    /** The public page's view of a link, by its id alone. */
    const page = Effect.fn("PaymentLinks.page")(function* (linkId: string) {
      const row = yield* Effect.flatMap(Effect.orDie(store.findPublic(linkId)), (r) =>
        Option.match(r, {
          onNone: () => Effect.fail(new PaymentLinkNotFound({ paymentLinkId: linkId })),
          onSome: Effect.succeed
        })
      )
      const status = linkStatus(row)
      const assets = payableAssets(row, yield* catalog.policies(row.merchant_id))
      const closed =
        status !== "active"
          ? Option.some(new PaymentLinkClosed({ paymentLinkId: row.id, state: status, reason: CLOSED_REASONS[status] }))
          : Either.isLeft(assets)
            ? Option.some(
                new PaymentLinkClosed({ paymentLinkId: row.id, state: "unpayable", reason: CLOSED_REASONS.unpayable })
              )
            : Option.none()
      const view: PaymentLinkPage = {
        paymentLinkId: row.id,
        merchantName: row.merchant_name,
        productName: row.product_name,
        productDesc: row.product_desc,
        amount: row.amount === null ? undefined : normalizeDecimal(row.amount),
        minAmount: row.min_amount === null ? undefined : normalizeDecimal(row.min_amount),
        maxAmount: row.max_amount === null ? undefined : normalizeDecimal(row.max_amount),
        currency: row.currency,
        assets: Either.getOrElse(assets, () => []),
        closed
      }
      const loaded: LoadedLink = { view, row }
      return loaded
    })

    /** The customer's amount: the fixed price, or what they chose within the bounds. */
    const chosenAmount = (row: PaymentLinkRow, form: PayForm) => {
      if (row.amount !== null) return Either.right(row.amount)
      const written = (form.amount ?? "").trim()
      const decoded = decodeAmount(written)
      if (written === "" || Either.isLeft(decoded)) return Either.left("Enter an amount such as 12.5.")
      const amount = new MoneyDecimal(decoded.right)
      if (amount.lte(0)) return Either.left("The amount must be greater than 0.")
      if (row.min_amount !== null && amount.lessThan(row.min_amount))
        return Either.left(`The amount must be at least ${normalizeDecimal(row.min_amount)} ${row.currency}.`)
      if (row.max_amount !== null && amount.greaterThan(row.max_amount))
        return Either.left(`The amount must be at most ${normalizeDecimal(row.max_amount)} ${row.currency}.`)
      return Either.right(decoded.right)
    }

    /**
     * A visit of the public page (the link as `page` read it): checks the customer's amount and asset, then,
     * with the link locked, that it still takes visits, and creates the order through `Orders.create`.
     * Refused: nothing is created.
     */
    const visit = Effect.fn("PaymentLinks.visit")(function* ({ view, row }: LoadedLink, form: PayForm) {
      const linkId = row.id
      if (Option.isSome(view.closed)) return yield* view.closed.value
      const amount = chosenAmount(row, form)
      if (Either.isLeft(amount)) return yield* new InvalidPaymentLinkVisit({ reason: amount.left })
      const picked = (form.asset ?? "").trim()
      const asset = view.assets.find((a) => a.key === picked)
      if (picked !== "" && asset === undefined)
        return yield* new InvalidPaymentLinkVisit({
          reason: `Pick one of ${view.assets.map((a) => a.key).join(", ")}.`
        })
      const terms = termsOf(row)
      const usable = view.assets.map((a) => ({ chain: a.chain, currency: a.currency }))
      const request: CreateOrderRequest = {
        ...(asset === undefined
          ? orderRequest(terms, amount.right, terms.accepted_assets === undefined ? undefined : usable)
          : orderRequest({ ...terms, chain: undefined, checkout_mode: "single_asset" }, amount.right, [
              { chain: asset.chain, currency: asset.currency }
            ])),
        expire_minutes: row.order_expire_minutes,
        product_name: row.product_name,
        ...(row.product_desc === null ? {} : { product_desc: row.product_desc }),
        ...(row.return_url === null ? {} : { return_url: row.return_url }),
        ...(row.notify_url === null ? {} : { notify_url: row.notify_url }),
        ...(row.metadata === null ? {} : { metadata: row.metadata })
      }
      // the customer's amount at the asset's precision (the link's bounds were checked at theirs)
      const priced = priceOrder(request, yield* catalog.policies(row.merchant_id))
      if (Either.isLeft(priced)) return yield* new InvalidPaymentLinkVisit({ reason: `The amount: ${priced.left}.` })

      const created = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            // visits of one link queue here (and a deactivation with them); its state is read once the lock is theirs
            if (Option.isNone(yield* store.lockForVisit(linkId)))
              return yield* new PaymentLinkNotFound({ paymentLinkId: linkId })
            const now = yield* found(row.merchant_id, linkId)
            const status = linkStatus(now)
            if (status !== "active")
              return yield* new PaymentLinkClosed({
                paymentLinkId: linkId,
                state: status,
                reason: CLOSED_REASONS[status]
              })
            // no idempotency key, and the order was just written: neither of these can happen
            return yield* orders
              .create(row.merchant_id, request, Option.none(), { paymentLinkId: linkId })
              .pipe(Effect.catchTags({ IdempotencyKeyReused: Effect.die, OrderNotFound: Effect.die }))
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      yield* Effect.logInfo("payment link visited").pipe(
        Effect.annotateLogs({ payment_link_id: linkId, order_id: created.order.order_id })
      )
      return created.order
    })

    return { create, get, list, deactivate, ordersOf, page, visit } as const
  }),
  dependencies: [AssetCatalog.Default, AuditLog.Default, Idempotency.Default, Orders.Default, PaymentLinkStore.Default]
}) {}
