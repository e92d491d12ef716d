import { Schema } from "effect"
import { DecimalString, RequestAmount } from "../money.js"
import { Chain } from "./chain.js"
import { BoundedString, LimitOffset } from "./order.js"

export const RefundStatus = Schema.Literal(
  "PENDING_CLAIM",
  "CLAIMED",
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "EXPIRED"
).annotations({
  identifier: "RefundStatus",
  description:
    "PENDING_CLAIM (funds locked, the claim link is out) → CLAIMED (the customer gave an address; its withdrawal of kind refund awaits approval or is on its way) → COMPLETED | FAILED (its withdrawal was rejected, cancelled or failed: the money is back in available). PENDING_CLAIM → CANCELLED (by the merchant) | EXPIRED (the link was not used in time): unlocked."
})
export type RefundStatus = typeof RefundStatus.Type

/** The claim link's default and longest lifetime. */
export const DEFAULT_CLAIM_HOURS = 168
export const MAX_CLAIM_HOURS = 720

const strict = { onExcessProperty: "error", errors: "all" } as const

/** POST /v1/orders/{order_id}/refunds. */
export const CreateRefundRequest = Schema.Struct({
  chain: Schema.optional(Chain).annotations({
    description: "The asset refunded: one the order was paid in. May be omitted when the order was paid in one asset"
  }),
  currency: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(16))),
  amount: Schema.optional(RequestAmount).annotations({
    description:
      "In the asset refunded (at most its precision); with `rate`, in the order's currency. Omitted: everything paid in the asset and not yet refunded"
  }),
  rate: Schema.optional(RequestAmount).annotations({
    description:
      "Asset units per unit of the order's currency: the refund is amount × rate, rounded down at the asset's precision"
  }),
  reason: Schema.optional(BoundedString(500)),
  claim_expire_hours: Schema.optional(
    Schema.Int.pipe(
      Schema.between(1, MAX_CLAIM_HOURS, {
        message: () => `claim_expire_hours must be an integer from 1 to ${MAX_CLAIM_HOURS}`
      })
    )
  ).annotations({ description: `How long the claim link works; default ${DEFAULT_CLAIM_HOURS} (7 days)` })
}).annotations({ identifier: "CreateRefundRequest", parseOptions: strict })
export type CreateRefundRequest = typeof CreateRefundRequest.Type

export const Refund = Schema.Struct({
  refund_id: Schema.String,
  order_id: Schema.String,
  status: RefundStatus,
  chain: Chain,
  currency: Schema.String,
  amount: DecimalString.annotations({ description: "In the asset refunded: what is locked and sent (before fees)" }),
  order_amount: Schema.NullOr(DecimalString).annotations({
    description: "With a stated rate: the amount asked in the order's currency"
  }),
  rate: Schema.NullOr(DecimalString),
  reason: Schema.NullOr(Schema.String),
  claim_url: Schema.optional(Schema.String).annotations({
    description:
      "The customer's claim page, a credential: shown once, in the creation's answer (and by POST /v1/refunds/{refund_id}/claim-link, which replaces it)"
  }),
  claim_expires_at: Schema.String,
  to_address: Schema.NullOr(Schema.String).annotations({ description: "The destination the customer gave" }),
  withdrawal_id: Schema.NullOr(Schema.String).annotations({
    description: "Its withdrawal of kind refund, once claimed"
  }),
  net_amount: Schema.NullOr(DecimalString).annotations({
    description: "What the customer receives: the amount less the withdrawal's fees, quoted at the claim"
  }),
  tx_hash: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  claimed_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "Refund" })
export type Refund = typeof Refund.Type

export const RefundList = Schema.Struct({
  total: Schema.Number,
  limit: Schema.Number,
  offset: Schema.Number,
  items: Schema.Array(Refund)
}).annotations({ identifier: "RefundList" })
export type RefundList = typeof RefundList.Type

export const RefundListQuery = Schema.Struct({
  status: Schema.optional(RefundStatus),
  ...LimitOffset
}).annotations({ parseOptions: { errors: "all" } })

export const OrderRefundListQuery = Schema.Struct({ ...LimitOffset }).annotations({
  parseOptions: { errors: "all" }
})

/** Body of refund.updated: one per status change. */
export const RefundWebhook = Schema.Struct({
  event: Schema.Literal("refund.updated"),
  refund: Refund,
  created_at: Schema.String
}).annotations({ identifier: "RefundWebhook" })
