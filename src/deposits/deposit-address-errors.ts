import { Schema } from "effect"

/** What a deposit-address request or lookup can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

export class DepositAddressNotFound extends Schema.TaggedError<DepositAddressNotFound>()("DepositAddressNotFound", {
  depositAddressId: Schema.String
}) {
  override get message() {
    return `deposit address ${this.depositAddressId} not found`
  }
}

/** The request (or batch) cannot be assigned as sent; `reason` says what to fix. */
export class InvalidDepositAddressRequest extends Schema.TaggedError<InvalidDepositAddressRequest>()(
  "InvalidDepositAddressRequest",
  { reason: Schema.String }
) {
  override get message() {
    return this.reason
  }
}
