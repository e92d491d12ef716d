import { Schema } from "effect"

/** What requesting, quoting and deciding a withdrawal can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

export class WithdrawalNotFound extends Schema.TaggedError<WithdrawalNotFound>()("WithdrawalNotFound", {
  withdrawalId: Schema.String
}) {
  override get message() {
    return `withdrawal ${this.withdrawalId} not found`
  }
}

/** The merchant has not enrolled the asset. */
export class AssetNotEnabled extends Schema.TaggedError<AssetNotEnabled>()("AssetNotEnabled", {
  assetKey: Schema.String
}) {
  override get message() {
    return `asset ${this.assetKey} is not enabled for this merchant`
  }
}

/** The asset cannot be withdrawn (unknown, not live, no withdrawals, no signing); `reason` says which. */
export class AssetUnavailable extends Schema.TaggedError<AssetUnavailable>()("AssetUnavailable", {
  assetKey: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The request's own values cannot be withdrawn (amount, precision, destination, fees eating it). */
export class InvalidWithdrawalRequest extends Schema.TaggedError<InvalidWithdrawalRequest>()(
  "InvalidWithdrawalRequest",
  { reason: Schema.String }
) {
  override get message() {
    return this.reason
  }
}

/** Less is available (collected, unlocked) than the withdrawal asks. */
export class InsufficientAvailable extends Schema.TaggedError<InsufficientAvailable>()("InsufficientAvailable", {
  chain: Schema.String,
  currency: Schema.String,
  available: Schema.String,
  requested: Schema.String
}) {
  override get message() {
    return `available ${this.available} ${this.currency} on ${this.chain} is less than ${this.requested} (only collected funds can be withdrawn; GET /v1/wallet-portfolio)`
  }
}

export class OutWithdrawalNoTaken extends Schema.TaggedError<OutWithdrawalNoTaken>()("OutWithdrawalNoTaken", {
  outWithdrawalNo: Schema.String
}) {
  override get message() {
    return `out_withdrawal_no ${this.outWithdrawalNo} is already used by another withdrawal of this merchant`
  }
}

/** A decision on a withdrawal that is no longer PENDING. */
export class WithdrawalNotPending extends Schema.TaggedError<WithdrawalNotPending>()("WithdrawalNotPending", {
  withdrawalId: Schema.String,
  status: Schema.String,
  decision: Schema.Literal("APPROVED", "REJECTED", "CANCELLED")
}) {
  override get message() {
    return `withdrawal ${this.withdrawalId} is ${this.status}: only a PENDING withdrawal can be ${this.decision.toLowerCase()}`
  }
}

/** The decider may not decide this withdrawal (role, removed, cooling off, own request, operator posing). */
export class ApproverNotAllowed extends Schema.TaggedError<ApproverNotAllowed>()("ApproverNotAllowed", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** An approval that would count twice: the same person again, or a second operator/policy approval. */
export class DuplicateApproval extends Schema.TaggedError<DuplicateApproval>()("DuplicateApproval", {
  withdrawalId: Schema.String,
  /** The console user who approved already; absent: an operator or policy approval is already there. */
  approvedBy: Schema.optional(Schema.String),
  /** How the message names what was approved, when it is not a withdrawal ("withdrawal batch wbt_…"). */
  subject: Schema.optional(Schema.String)
}) {
  override get message() {
    const what = this.subject ?? `withdrawal ${this.withdrawalId}`
    return this.approvedBy === undefined
      ? `${what} already has an operator or policy approval; at most one counts: the rest of the quorum must come from console users`
      : `${this.approvedBy} has already approved ${what}: the same person counts once`
  }
}

/** Auto-approval asked for an asset the merchant has not enrolled. */
export class AssetNotEnrolled extends Schema.TaggedError<AssetNotEnrolled>()("AssetNotEnrolled", {
  merchantId: Schema.String,
  assetKey: Schema.String
}) {
  override get message() {
    return `merchant ${this.merchantId} has no asset ${this.assetKey} enrolled`
  }
}
