import { Schema } from "effect"
import { WithdrawalBatchItemProblem } from "../src/domain/withdrawal-batch.js"

/**
 * What asking for, and deciding on, a withdrawal batch can fail with; statuses are the HTTP edge's
 * (http/error-statuses.ts). The three refusals of a new batch carry every refused item: the API answers
 * them as `{error, items}` (http/handlers/withdrawal-batches.ts), the console as a list of rows.
 */

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`

/** Items the batch cannot hold as asked (asset, address, precision, zero net, a repeated reference): 400. */
export class InvalidWithdrawalBatch extends Schema.TaggedError<InvalidWithdrawalBatch>()("InvalidWithdrawalBatch", {
  items: Schema.Array(WithdrawalBatchItemProblem)
}) {
  override get message() {
    return `${plural(this.items.length, "item")} of the batch cannot be withdrawn as asked: the batch is refused whole, nothing was locked`
  }
}

/** Items whose out_withdrawal_no one of the merchant's withdrawals already uses: 409, as for one withdrawal. */
export class WithdrawalBatchConflict extends Schema.TaggedError<WithdrawalBatchConflict>()("WithdrawalBatchConflict", {
  items: Schema.Array(WithdrawalBatchItemProblem)
}) {
  override get message() {
    return `${plural(this.items.length, "item")} of the batch use an out_withdrawal_no the merchant's withdrawals already use: the batch is refused whole, nothing was locked`
  }
}

/** The withdrawal policy refuses items (address book, per-withdrawal limit) or a total (rolling 24 h): 403. */
export class WithdrawalBatchPolicyRefused extends Schema.TaggedError<WithdrawalBatchPolicyRefused>()(
  "WithdrawalBatchPolicyRefused",
  { totals: Schema.Array(Schema.String), items: Schema.Array(WithdrawalBatchItemProblem) }
) {
  override get message() {
    const parts = [
      ...this.totals,
      ...(this.items.length > 0 ? [`the policy refuses ${plural(this.items.length, "item")}`] : [])
    ]
    return `the withdrawal policy refuses the batch (${parts.join("; ")}): nothing was locked`
  }
}

export class WithdrawalBatchNotFound extends Schema.TaggedError<WithdrawalBatchNotFound>()("WithdrawalBatchNotFound", {
  batchId: Schema.String
}) {
  override get message() {
    return `withdrawal batch ${this.batchId} not found`
  }
}

/** A decision on a batch that is no longer PENDING. */
export class WithdrawalBatchNotPending extends Schema.TaggedError<WithdrawalBatchNotPending>()(
  "WithdrawalBatchNotPending",
  {
    batchId: Schema.String,
    status: Schema.String,
    decision: Schema.Literal("APPROVED", "REJECTED", "CANCELLED")
  }
) {
  override get message() {
    return `withdrawal batch ${this.batchId} is ${this.status}: only a PENDING batch can be ${this.decision.toLowerCase()}`
  }
}

/** A decision asked on one item of a batch: the batch is decided as one. */
export class BatchItemNotDecidable extends Schema.TaggedError<BatchItemNotDecidable>()("BatchItemNotDecidable", {
  withdrawalId: Schema.String,
  batchId: Schema.String
}) {
  override get message() {
    return `withdrawal ${this.withdrawalId} is an item of withdrawal batch ${this.batchId}: a batch is approved, rejected or cancelled as a whole, on the batch, never item by item`
  }
}
