import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"

export const WalletAssetsHandlers = HttpApiBuilder.group(FacetApi, "walletAssets", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* AssetCatalog
    return handlers
      .handle("policies", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentMerchant
          return { items: yield* catalog.policies(principal.merchantId) }
        }))
      .handle("enroll", ({ payload }) =>
        Effect.flatMap(CurrentMerchant, (principal) => catalog.enroll(principal.merchantId, payload)))
  }))
