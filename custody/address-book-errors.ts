import { Schema } from "effect"

/** What editing the withdrawal address book can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

/** The entry cannot be added as sent (chain, address, label); `reason` says why. */
export class InvalidAddressBookEntry extends Schema.TaggedError<InvalidAddressBookEntry>()("InvalidAddressBookEntry", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

export class AddressAlreadyInBook extends Schema.TaggedError<AddressAlreadyInBook>()("AddressAlreadyInBook", {
  chain: Schema.String,
  address: Schema.String
}) {
  override get message() {
    return `${this.address} is already in the address book on ${this.chain}`
  }
}

export class AddressBookEntryNotFound extends Schema.TaggedError<AddressBookEntryNotFound>()(
  "AddressBookEntryNotFound",
  { entryId: Schema.String }
) {
  override get message() {
    return `no address book entry ${this.entryId}`
  }
}
