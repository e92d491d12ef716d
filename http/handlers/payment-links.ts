import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { PaymentLink } from "../../src/domain/payment-link.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { PaymentLinks } from "../../src/payment-links/payment-links.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

export const PaymentLinksHandlers = HttpApiBuilder.group(FacetApi, "paymentLinks", (handlers) =>
  Effect.gen(function* () {
    const links = yield* PaymentLinks
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("orders", "creating a payment link")
          const key = Option.fromNullable(headers["x-service-idempotency-key"])
          const { link, status } = yield* links.create(principal.merchantId, payload, key, {
            kind: "api_key",
            name: principal.apiKeyId
          })
          // a replay answers with the status of the first response
          return yield* HttpServerResponse.schemaJson(PaymentLink)(link, { status }).pipe(Effect.orDie)
        }).pipe(categorized)
      )
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentMerchant, (p) => links.list(p.merchantId, urlParams)))
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (p) => links.get(p.merchantId, path.payment_link_id)).pipe(categorized)
      )
      .handle("deactivate", ({ path }) =>
        Effect.flatMap(requireScope("orders", "deactivating a payment link"), (principal) =>
          links.deactivate(principal.merchantId, path.payment_link_id, { kind: "api_key", name: principal.apiKeyId })
        ).pipe(categorized)
      )
      .handle("orders", ({ path, urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) => links.ordersOf(p.merchantId, path.payment_link_id, urlParams)).pipe(
          categorized
        )
      )
  })
)
