import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Order } from "../../src/domain/order.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { Orders } from "../../src/orders/orders.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

export const OrdersHandlers = HttpApiBuilder.group(FacetApi, "orders", (handlers) =>
  Effect.gen(function* () {
    const orders = yield* Orders
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentMerchant, (p) => orders.list(p.merchantId, urlParams)))
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("orders", "creating an order")
          const key = Option.fromNullable(headers["x-service-idempotency-key"])
          const { order, status } = yield* orders.create(principal.merchantId, payload, key)
          // a replay answers with the status of the first response
          return yield* HttpServerResponse.schemaJson(Order)(order, { status }).pipe(Effect.orDie)
        }).pipe(categorized)
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (p) => orders.get(p.merchantId, path.order_id)).pipe(categorized)
      )
  })
)
