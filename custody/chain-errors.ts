import { Schema } from "effect"

/** A chain custody needs cannot be used right now (503: retry later); statuses are the HTTP edge's. */

/** The network fee could not be estimated: the chain's nodes did not answer. */
export class NetworkFeeUnavailable extends Schema.TaggedError<NetworkFeeUnavailable>()("NetworkFeeUnavailable", {
  chain: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot estimate the ${this.chain} network fee now: ${this.reason}`
  }
}

/** The platform gas wallet is known to be empty: sweeps cannot be funded until it is topped up. */
export class GasWalletEmpty extends Schema.TaggedError<GasWalletEmpty>()("GasWalletEmpty", {
  chain: Schema.String,
  balance: Schema.String,
  asset: Schema.String
}) {
  override get message() {
    return `the platform gas wallet on ${this.chain} is empty (${this.balance} ${this.asset}): sweeps cannot be funded until an operator tops it up`
  }
}
