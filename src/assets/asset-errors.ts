import { Schema } from "effect"

/** What enrolling in or moving an asset can fail with; statuses are the HTTP edge's (http/error-statuses.ts). */

/** No such asset in the catalog. */
export class UnknownAsset extends Schema.TaggedError<UnknownAsset>()("UnknownAsset", { assetKey: Schema.String }) {
  override get message() {
    return `unknown asset ${this.assetKey}: GET /v1/wallet-asset-policies lists the supported assets`
  }
}

/** The catalog lists the asset but it is sunset or not yet available: it cannot be enrolled. */
export class AssetNotEnrollable extends Schema.TaggedError<AssetNotEnrollable>()("AssetNotEnrollable", {
  assetKey: Schema.String,
  status: Schema.Literal("disabled", "planned")
}) {
  override get message() {
    return this.status === "disabled"
      ? `asset ${this.assetKey} is disabled (sunset) and cannot be enrolled`
      : `asset ${this.assetKey} is planned and not yet available`
  }
}
