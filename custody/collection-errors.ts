import { Schema } from "effect"

/** What looking at a wallet asset or sweeping one can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

/** No asset of that key in the catalog (a path's asset, so: not found). */
export class WalletAssetNotFound extends Schema.TaggedError<WalletAssetNotFound>()("WalletAssetNotFound", {
  assetKey: Schema.String
}) {
  override get message() {
    return `unknown asset ${this.assetKey}: GET /v1/wallet-asset-policies lists the assets`
  }
}

export class ReceiveWalletNotFound extends Schema.TaggedError<ReceiveWalletNotFound>()("ReceiveWalletNotFound", {
  walletId: Schema.String,
  chain: Schema.String
}) {
  override get message() {
    return `receive wallet ${this.walletId} not found on ${this.chain}`
  }
}

export class SweepNotFound extends Schema.TaggedError<SweepNotFound>()("SweepNotFound", {
  operationId: Schema.String,
  assetKey: Schema.String
}) {
  override get message() {
    return `sweep ${this.operationId} of ${this.assetKey} not found`
  }
}

/** The sweep asks for more than the wallet holds uncollected. */
export class InsufficientUncollected extends Schema.TaggedError<InsufficientUncollected>()("InsufficientUncollected", {
  walletId: Schema.String,
  currency: Schema.String,
  requested: Schema.String,
  uncollected: Schema.String
}) {
  override get message() {
    return `amount ${this.requested} is more than the uncollected ${this.uncollected} ${this.currency} of wallet ${this.walletId}`
  }
}

export class NothingToSweep extends Schema.TaggedError<NothingToSweep>()("NothingToSweep", {
  walletId: Schema.String,
  assetKey: Schema.String
}) {
  override get message() {
    return `nothing to sweep: wallet ${this.walletId} has no uncollected ${this.assetKey} (final deposits only)`
  }
}

/** The sweep cannot be made as asked (the asset does not collect, precision, gas too dear); `reason` says why. */
export class InvalidSweepRequest extends Schema.TaggedError<InvalidSweepRequest>()("InvalidSweepRequest", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The wallet already has a sweep under way: one at a time. */
export class SweepInFlight extends Schema.TaggedError<SweepInFlight>()("SweepInFlight", {
  walletId: Schema.String,
  /** The sweep under way, when it could be read. */
  operationId: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String)
}) {
  override get message() {
    return `wallet ${this.walletId} already has a sweep in flight: ${this.operationId ?? "another operation"} (${this.status ?? "in progress"}); GET its state and try again once it is finished`
  }
}
