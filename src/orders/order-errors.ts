import { Schema } from "effect"

/** What an order request or lookup can fail with; the HTTP edge gives each its status (http/error-statuses.ts). */

export class OrderNotFound extends Schema.TaggedError<OrderNotFound>()("OrderNotFound", { orderId: Schema.String }) {
  override get message() {
    return `order ${this.orderId} not found`
  }
}

/** The order cannot be priced as asked; `reason` is the pricing's own words. */
export class InvalidOrderRequest extends Schema.TaggedError<InvalidOrderRequest>()("InvalidOrderRequest", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** An underpayment tolerance the console cannot set (out of bounds, not a number, an asset not enabled). */
export class InvalidUnderpaymentTolerance extends Schema.TaggedError<InvalidUnderpaymentTolerance>()(
  "InvalidUnderpaymentTolerance",
  { reason: Schema.String }
) {
  override get message() {
    return this.reason
  }
}
