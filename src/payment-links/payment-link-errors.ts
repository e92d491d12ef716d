import { Schema } from "effect"

/** What a payment link request or visit can fail with; the HTTP edge gives each its status (http/error-statuses.ts). */

export class PaymentLinkNotFound extends Schema.TaggedError<PaymentLinkNotFound>()("PaymentLinkNotFound", {
  paymentLinkId: Schema.String
}) {
  override get message() {
    return `payment link ${this.paymentLinkId} not found`
  }
}

/** The link cannot be created as asked; `reason` says why. */
export class InvalidPaymentLinkRequest extends Schema.TaggedError<InvalidPaymentLinkRequest>()(
  "InvalidPaymentLinkRequest",
  { reason: Schema.String }
) {
  override get message() {
    return this.reason
  }
}

/**
 * The link takes no visit now: deactivated (`inactive`), every use taken (`completed`), past its expiry
 * (`expired`), or none of its assets can take a payment any more (`unpayable`). Nothing is created.
 */
export class PaymentLinkClosed extends Schema.TaggedError<PaymentLinkClosed>()("PaymentLinkClosed", {
  paymentLinkId: Schema.String,
  state: Schema.Literal("inactive", "completed", "expired", "unpayable"),
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The customer's part of a visit is wrong (the amount chosen, the asset picked); nothing is created. */
export class InvalidPaymentLinkVisit extends Schema.TaggedError<InvalidPaymentLinkVisit>()("InvalidPaymentLinkVisit", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}
