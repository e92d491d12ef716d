import { Schema } from "effect"

/** What merchant lookups and applications can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

export class MerchantNotFound extends Schema.TaggedError<MerchantNotFound>()("MerchantNotFound", {
  merchantId: Schema.String
}) {
  override get message() {
    return `merchant ${this.merchantId} not found`
  }
}

/** A key asked about a merchant other than its own (whether or not that one exists: no id oracle). */
export class NotOwnMerchant extends Schema.TaggedError<NotOwnMerchant>()("NotOwnMerchant", {
  merchantId: Schema.String
}) {
  override get message() {
    return "this API key belongs to another merchant"
  }
}

/** Another applicant registered this project name. */
export class ProjectNameTaken extends Schema.TaggedError<ProjectNameTaken>()("ProjectNameTaken", {
  projectName: Schema.String
}) {
  override get message() {
    return (
      `project_name "${this.projectName}" is already registered by another applicant; ` +
      "a repeat of your own application must carry the same contact_email (or website/repository_url when there is no email)"
    )
  }
}
