import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Checkout } from "../../src/orders/checkout.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { CHECKOUT_CSP, CHECKOUT_CSS, CHECKOUT_JS, renderCheckoutPage, renderNotFoundPage } from "../checkout-page.js"
import { pageHeaders } from "../html.js"

/** Headers every checkout response carries: nothing loads from elsewhere, nothing frames it. */
const SECURE = pageHeaders(CHECKOUT_CSP)

export const CheckoutHandlers = HttpApiBuilder.group(FacetApi, "checkout", (handlers) =>
  Effect.gen(function* () {
    const checkout = yield* Checkout
    return handlers
      .handle("page", ({ path }) =>
        checkout.view(path.order_id).pipe(
          Effect.flatMap((view) => Effect.promise(() => renderCheckoutPage(view))),
          Effect.map((html) =>
            HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8", headers: SECURE })
          ),
          Effect.catchTag("OrderNotFound", () =>
            Effect.succeed(
              HttpServerResponse.text(renderNotFoundPage(), {
                status: 404,
                contentType: "text/html; charset=utf-8",
                headers: SECURE
              })
            )
          )
        )
      )
      .handle("status", ({ path }) => categorized(checkout.status(path.order_id)))
      .handle("script", () =>
        Effect.succeed(
          HttpServerResponse.text(CHECKOUT_JS, { contentType: "text/javascript; charset=utf-8", headers: SECURE })
        )
      )
      .handle("stylesheet", () =>
        Effect.succeed(
          HttpServerResponse.text(CHECKOUT_CSS, { contentType: "text/css; charset=utf-8", headers: SECURE })
        )
      )
  })
)
