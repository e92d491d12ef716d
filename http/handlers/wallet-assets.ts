import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Collections } from "../../custody/collections.js"
import { WalletPortfolioViews } from "../../custody/wallet-portfolio.js"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import { ForbiddenError } from "../../src/domain/errors.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"

export const WalletAssetsHandlers = HttpApiBuilder.group(FacetApi, "walletAssets", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* AssetCatalog
    const collections = yield* Collections
    const views = yield* WalletPortfolioViews
    return handlers
      .handle("policies", () =>
        Effect.gen(function* () {
          const principal = yield* CurrentMerchant
          return { items: yield* catalog.policies(principal.merchantId) }
        })
      )
      .handle("enroll", ({ payload }) =>
        Effect.flatMap(CurrentMerchant, (principal) => catalog.enroll(principal.merchantId, payload)).pipe(categorized)
      )
      .handle("portfolio", () => Effect.flatMap(CurrentMerchant, (principal) => views.portfolio(principal.merchantId)))
      .handle("assets", () =>
        Effect.gen(function* () {
          const principal = yield* CurrentMerchant
          // RFC 9745 Deprecation and an RFC 8288 link to the successor
          yield* HttpApp.appendPreResponseHandler((_, response) =>
            Effect.succeed(
              HttpServerResponse.setHeaders(response, {
                deprecation: "true",
                link: '</v1/wallet-portfolio>; rel="successor-version"'
              })
            )
          )
          return yield* views.summary(principal.merchantId)
        })
      )
      .handle("asset", ({ path, urlParams }) =>
        Effect.flatMap(CurrentMerchant, (principal) =>
          views.detail(principal.merchantId, path.asset_key, urlParams)
        ).pipe(categorized)
      )
      .handle("sweep", ({ path, payload }) =>
        Effect.gen(function* () {
          const principal = yield* CurrentMerchant
          if (!principal.scopes.includes("wallet")) {
            return yield* new ForbiddenError({
              error: "this API key lacks the wallet scope that sweeps need; use a key with the wallet scope"
            })
          }
          return yield* collections.request(principal.merchantId, path.asset_key, payload)
        }).pipe(categorized)
      )
      .handle("sweepStatus", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (principal) =>
          collections.get(principal.merchantId, path.asset_key, path.operation_id)
        ).pipe(categorized)
      )
  })
)
