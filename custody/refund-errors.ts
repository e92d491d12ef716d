import { Schema } from "effect"

/** What creating, claiming and cancelling a refund can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

export class RefundNotFound extends Schema.TaggedError<RefundNotFound>()("RefundNotFound", {
  refundId: Schema.String
}) {
  override get message() {
    return `refund ${this.refundId} not found`
  }
}

/** The refund request's own values cannot be refunded (asset, amount, rate, more than paid); `reason` says why. */
export class InvalidRefundRequest extends Schema.TaggedError<InvalidRefundRequest>()("InvalidRefundRequest", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The order's payment is still in its receive address: refunds leave from the main wallet (available). */
export class RefundNeedsCollection extends Schema.TaggedError<RefundNeedsCollection>()("RefundNeedsCollection", {
  chain: Schema.String,
  currency: Schema.String,
  available: Schema.String,
  requested: Schema.String
}) {
  override get message() {
    return `available ${this.available} ${this.currency} on ${this.chain} is less than the ${this.requested} to refund: refunds leave from the main wallet, so collect the order's payment first (POST /v1/wallet-assets/${this.chain}-${this.currency}/sweep; GET /v1/wallet-portfolio shows what is uncollected)`
  }
}

/** The refund is past the state the act needs (claimed already, cancelled, expired). */
export class RefundNotClaimable extends Schema.TaggedError<RefundNotClaimable>()("RefundNotClaimable", {
  refundId: Schema.String,
  status: Schema.String,
  act: Schema.Literal("claimed", "cancelled", "given a new link")
}) {
  override get message() {
    return this.status === "PENDING_CLAIM"
      ? `refund ${this.refundId}'s claim link has expired: it can no longer be ${this.act}`
      : `refund ${this.refundId} is ${this.status}: only an unclaimed refund (PENDING_CLAIM) can be ${this.act}`
  }
}

/** No refund has this claim link (mistyped, or replaced by a newer link). */
export class RefundClaimNotFound extends Schema.TaggedError<RefundClaimNotFound>()("RefundClaimNotFound", {}) {
  override get message() {
    return "no refund has this claim link: check the link, or ask the merchant for a new one"
  }
}

/** The destination the customer gave cannot receive the refund; `reason` says why. */
export class InvalidRefundClaim extends Schema.TaggedError<InvalidRefundClaim>()("InvalidRefundClaim", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}
