import { Schema } from "effect"
import { DecimalString, RequestAmount } from "../money.js"
import { Chain } from "./chain.js"
import { HttpUri } from "./onboarding.js"

export const OrderStatus = Schema.Literal("PENDING", "CONFIRMING", "PAID", "EXPIRED", "PARTIALLY_PAID").annotations({
  identifier: "OrderStatus"
})
export type OrderStatus = typeof OrderStatus.Type

export const CheckoutMode = Schema.Literal("single_asset", "multi_asset")
export type CheckoutMode = typeof CheckoutMode.Type

const strict = { onExcessProperty: "error", errors: "all" } as const

export const AcceptedAsset = Schema.Struct({
  chain: Chain,
  currency: Schema.String.pipe(Schema.minLength(1))
}).annotations({ identifier: "AcceptedAsset", parseOptions: strict })

/** A request string with a documented maximum length. */
export const BoundedString = (max: number) =>
  Schema.String.pipe(Schema.maxLength(max, { message: () => `at most ${max} characters` }))

export const CreateOrderRequest = Schema.Struct({
  amount: RequestAmount,
  out_trade_no: Schema.optional(BoundedString(128)),
  currency: Schema.optional(BoundedString(16).pipe(Schema.minLength(1))),
  chain: Schema.optional(Chain),
  checkout_mode: Schema.optional(CheckoutMode),
  accepted_assets: Schema.optional(Schema.Array(AcceptedAsset).pipe(Schema.minItems(1))),
  exchange_rate: Schema.optional(RequestAmount),
  notify_url: Schema.optional(HttpUri),
  return_url: Schema.optional(HttpUri),
  expire_minutes: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1440, { message: () => "expire_minutes must be an integer from 1 to 1440" }))
  ),
  merchant_user_id: Schema.optional(BoundedString(128)),
  product_name: Schema.optional(BoundedString(256)),
  product_desc: Schema.optional(BoundedString(2000)),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "CreateOrderRequest", parseOptions: strict })
export type CreateOrderRequest = typeof CreateOrderRequest.Type

export const AvailableAsset = Schema.Struct({
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  amount: DecimalString,
  pay_address: Schema.String,
  pay_qrcode: Schema.optional(Schema.String),
  wallet_id: Schema.String,
  /** The shortfall this asset allows (the merchant's underpayment tolerance when the order was made); absent: none. */
  underpayment_tolerance: Schema.optional(DecimalString)
}).annotations({ identifier: "AvailableAsset" })
export type AvailableAsset = typeof AvailableAsset.Type

export const Order = Schema.Struct({
  order_id: Schema.String,
  out_trade_no: Schema.String,
  status: OrderStatus,
  amount: DecimalString,
  paid_amount: DecimalString,
  refunded_amount: DecimalString.annotations({
    description:
      "What refunds of this order have given back or are giving back (not CANCELLED, EXPIRED or FAILED), in the order's currency as paid_amount counts it: each asset's refunds at the order's own price of that asset"
  }),
  currency: Schema.String,
  chain: Chain,
  checkout_mode: CheckoutMode,
  pay_address: Schema.String,
  pay_qrcode: Schema.optional(Schema.String),
  checkout_url: Schema.String,
  return_url: Schema.optional(Schema.String),
  notify_url: Schema.optional(Schema.String),
  tx_hash: Schema.optional(Schema.String),
  late_payment: Schema.Boolean,
  /**
   * A PAID order accepted within the merchant's underpayment tolerance: what it still lacks (amount −
   * paid_amount). Absent when nothing is lacking.
   */
  underpaid_amount: Schema.optional(DecimalString),
  overpaid_amount: Schema.optional(DecimalString).annotations({
    description:
      "What the confirmed payments hold beyond the amount (paid_amount − amount), in the order's currency: payments after the order was PAID (each announced as payment.overpaid), or one larger than asked. The merchant may refund it. Absent when nothing is beyond the amount at the order's precision (a payment of one base unit of an 18-decimal token may be below it: its payment.overpaid's payment.amount names it)."
  }),
  exchange_rate: Schema.optional(DecimalString),
  merchant_user_id: Schema.optional(BoundedString(128)),
  product_name: Schema.optional(BoundedString(256)),
  product_desc: Schema.optional(BoundedString(2000)),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  available_assets: Schema.Array(AvailableAsset),
  /** The payment link whose page created the order (absent: created through the API). */
  payment_link_id: Schema.optional(Schema.String),
  expire_at: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Order" })
export type Order = typeof Order.Type

export const OrderList = Schema.Struct({
  total: Schema.Int,
  page: Schema.Int,
  size: Schema.Int,
  items: Schema.Array(Order)
}).annotations({ identifier: "OrderList" })

const IntFromString = (name: string, min: number, max: number) =>
  Schema.String.pipe(
    Schema.pattern(/^\d{1,10}$/, { message: () => `${name} must be an integer written in digits` }),
    Schema.compose(Schema.NumberFromString),
    Schema.int({ message: () => `${name} must be an integer` }),
    Schema.between(min, max, { message: () => `${name} must be an integer from ${min} to ${max}` })
  )

export const OrderListQuery = Schema.Struct({
  page: Schema.optionalWith(IntFromString("page", 1, 1_000_000), { default: () => 1 }),
  size: Schema.optionalWith(IntFromString("size", 1, 100), { default: () => 20 }),
  status: Schema.optional(OrderStatus),
  chain: Schema.optional(Chain)
}).annotations({ parseOptions: { errors: "all" } })

/** `limit`/`offset` paging of the contract's other lists. */
export const LimitOffset = {
  limit: Schema.optionalWith(IntFromString("limit", 1, 100), { default: () => 50 }),
  offset: Schema.optionalWith(IntFromString("offset", 0, 1_000_000_000), { default: () => 0 })
}

export const IdempotencyKeyHeader = Schema.Struct({
  "x-service-idempotency-key": Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[!-~]{1,128}$/, {
        message: () => "X-Service-Idempotency-Key must be 1 to 128 visible ASCII characters without whitespace"
      })
    )
  )
})
