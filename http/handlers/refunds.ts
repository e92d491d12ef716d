import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Refunds } from "../../custody/refunds.js"
import { Refund } from "../../src/domain/refund.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

/** Money leaves through a refund: creating, cancelling and relinking one need the withdrawals scope; any key reads. */
export const RefundsHandlers = HttpApiBuilder.group(FacetApi, "refunds", (handlers) =>
  Effect.gen(function* () {
    const refunds = yield* Refunds
    return handlers
      .handle("create", ({ path, headers, payload }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("withdrawals", "a refund")
          const key = Option.fromNullable(headers["x-service-idempotency-key"])
          const refund = yield* refunds.create(principal.merchantId, path.order_id, payload, key, {
            // a key minted in the console asks as its minter: that person cannot approve the refund's withdrawal
            actor: { kind: "api_key", name: principal.apiKeyId },
            consoleUserId: principal.mintedByUserId ?? undefined
          })
          return yield* HttpServerResponse.schemaJson(Refund)(refund, { status: 201 }).pipe(Effect.orDie)
        }).pipe(categorized)
      )
      .handle("listForOrder", ({ path, urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) => refunds.listForOrder(p.merchantId, path.order_id, urlParams)).pipe(
          categorized
        )
      )
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentMerchant, (p) => refunds.list(p.merchantId, urlParams)))
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (p) => refunds.get(p.merchantId, path.refund_id)).pipe(categorized)
      )
      .handle("cancel", ({ path }) =>
        Effect.flatMap(requireScope("withdrawals", "cancelling a refund"), (p) =>
          refunds.cancel(p.merchantId, path.refund_id, { kind: "api_key", name: p.apiKeyId })
        ).pipe(categorized)
      )
      .handle("claimLink", ({ path }) =>
        Effect.flatMap(requireScope("withdrawals", "a new claim link"), (p) =>
          refunds.newLink(p.merchantId, path.refund_id, { kind: "api_key", name: p.apiKeyId })
        ).pipe(categorized)
      )
  })
)
