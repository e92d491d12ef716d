import { Schema } from "effect"
import { DecimalString, RequestAmount } from "../money.js"
import { Chain } from "./chain.js"
import { HttpUri } from "./onboarding.js"
import { AcceptedAsset, BoundedString, CheckoutMode, CreateOrderRequest, LimitOffset, OrderStatus } from "./order.js"

const strict = { onExcessProperty: "error", errors: "all" } as const

/** A date-time with its time and offset written out (`2026-12-31T23:59:59Z`), as the contract's timestamps are. */
const DateTimeString = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, {
    message: () => "must be a date-time such as 2026-12-31T23:59:59Z"
  }),
  Schema.filter((value) => !Number.isNaN(Date.parse(value)) || "must be a valid date-time")
)

/**
 * `POST /v1/payment-links`: what each order the link creates copies. The price is `amount` (fixed) or the
 * customer's choice within `min_amount` / `max_amount` (at least one bound); `currency`, `chain`,
 * `checkout_mode` and `accepted_assets` mean what they mean on CreateOrderRequest (no `exchange_rate`: a
 * link prices in one currency).
 */
export const CreatePaymentLinkRequest = Schema.Struct({
  product_name: BoundedString(256).pipe(
    Schema.filter((name) => name.trim().length > 0 || "product_name must not be empty")
  ),
  product_desc: Schema.optional(BoundedString(2000)),
  amount: Schema.optional(RequestAmount),
  min_amount: Schema.optional(RequestAmount),
  max_amount: Schema.optional(RequestAmount),
  currency: CreateOrderRequest.fields.currency,
  chain: Schema.optional(Chain),
  checkout_mode: Schema.optional(CheckoutMode),
  accepted_assets: CreateOrderRequest.fields.accepted_assets,
  max_uses: Schema.optional(
    Schema.Int.pipe(
      Schema.between(1, 1_000_000_000, { message: () => "max_uses must be an integer from 1 to 1000000000" })
    )
  ),
  expires_at: Schema.optional(DateTimeString),
  order_expire_minutes: Schema.optional(
    Schema.Int.pipe(
      Schema.between(1, 1440, { message: () => "order_expire_minutes must be an integer from 1 to 1440" })
    )
  ),
  return_url: Schema.optional(HttpUri),
  notify_url: Schema.optional(HttpUri),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "CreatePaymentLinkRequest", parseOptions: strict })
export type CreatePaymentLinkRequest = typeof CreatePaymentLinkRequest.Type

/** Derived, never stored: deactivated; every use taken; past its expiry; else active. */
export const PaymentLinkStatus = Schema.Literal("active", "inactive", "completed", "expired").annotations({
  identifier: "PaymentLinkStatus"
})
export type PaymentLinkStatus = typeof PaymentLinkStatus.Type

export const PaymentLinkTotals = Schema.Struct({
  /** How many of the link's orders are in each status. */
  orders: Schema.Record({ key: OrderStatus, value: Schema.Int }),
  /** What was received on chain for the link's orders, final payments only, per asset. */
  paid: Schema.Array(
    Schema.Struct({ asset_key: Schema.String, chain: Chain, currency: Schema.String, amount: DecimalString })
  )
}).annotations({ identifier: "PaymentLinkTotals" })
export type PaymentLinkTotals = typeof PaymentLinkTotals.Type

export const PaymentLink = Schema.Struct({
  payment_link_id: Schema.String,
  /** The public page: share it; each visit that goes on to pay creates an order of its own. */
  url: Schema.String,
  status: PaymentLinkStatus,
  active: Schema.Boolean,
  product_name: Schema.String,
  product_desc: Schema.optional(Schema.String),
  amount: Schema.optional(DecimalString),
  min_amount: Schema.optional(DecimalString),
  max_amount: Schema.optional(DecimalString),
  currency: Schema.String,
  chain: Schema.optional(Chain),
  checkout_mode: Schema.optional(CheckoutMode),
  accepted_assets: Schema.optional(Schema.Array(AcceptedAsset)),
  max_uses: Schema.optional(Schema.Int),
  /**
   * The link's PAID orders: a use is a payment, never a visit (PENDING, CONFIRMING, PARTIALLY_PAID and EXPIRED
   * orders are not uses). Can pass `max_uses` when customers already at checkout pay after the last use.
   */
  uses: Schema.Int,
  expires_at: Schema.optional(Schema.String),
  order_expire_minutes: Schema.Int,
  return_url: Schema.optional(Schema.String),
  notify_url: Schema.optional(Schema.String),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  totals: PaymentLinkTotals,
  deactivated_at: Schema.optional(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "PaymentLink" })
export type PaymentLink = typeof PaymentLink.Type

export const PaymentLinkList = Schema.Struct({
  total: Schema.Int,
  limit: Schema.Int,
  offset: Schema.Int,
  items: Schema.Array(PaymentLink)
}).annotations({ identifier: "PaymentLinkList" })
export type PaymentLinkList = typeof PaymentLinkList.Type

export const PaymentLinkListQuery = Schema.Struct({
  ...LimitOffset,
  /** true: only links that take visits now; false: only those that do not. */
  active: Schema.optional(
    Schema.Literal("true", "false")
      .annotations({ message: () => "active must be true or false" })
      .pipe(
        Schema.transform(Schema.Boolean, {
          strict: true,
          decode: (value) => value === "true",
          encode: (value) => (value ? "true" : "false")
        })
      )
  )
}).annotations({ parseOptions: { errors: "all" } })

/** The form of the public page: the amount the customer chose (a link without a fixed price), the asset picked. */
export const PayForm = Schema.Struct({
  amount: Schema.optional(Schema.String),
  asset: Schema.optional(Schema.String)
})
export type PayForm = typeof PayForm.Type
