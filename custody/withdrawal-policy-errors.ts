import { Schema } from "effect"

/** What changing or applying a withdrawal policy can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

/** A policy setting that cannot be set as asked; `reason` says why. */
export class InvalidPolicySetting extends Schema.TaggedError<InvalidPolicySetting>()("InvalidPolicySetting", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

export class PolicyChangeNotFound extends Schema.TaggedError<PolicyChangeNotFound>()("PolicyChangeNotFound", {
  changeId: Schema.String
}) {
  override get message() {
    return `no pending policy change ${this.changeId}`
  }
}

/** The policy in force refuses a withdrawal (address book, limits); on an approval it names the withdrawal. */
export class PolicyRefused extends Schema.TaggedError<PolicyRefused>()("PolicyRefused", {
  reason: Schema.String,
  approving: Schema.optional(Schema.String)
}) {
  override get message() {
    return this.approving === undefined
      ? this.reason
      : `the withdrawal policy in force now refuses approving ${this.approving}: ${this.reason}`
  }
}
