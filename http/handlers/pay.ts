import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { PaymentLinks } from "../../src/payment-links/payment-links.js"
import { FacetApi } from "../api.js"
import { pageHeaders } from "../html.js"
import { PAY_CSP, PAY_CSS, renderPayMessage, renderPayPage } from "../pay-page.js"
import { RateLimiter } from "../rate-limiter.js"

/** Headers every page of a payment link carries: nothing loads from elsewhere, nothing frames it. */
const SECURE = pageHeaders(PAY_CSP)

const page = (text: string, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(text, { status, contentType: "text/html; charset=utf-8", headers: { ...SECURE, ...headers } })

const NOT_FOUND = renderPayMessage(
  "Payment link not found",
  "Check the link you were given, or ask the merchant for a new one."
)

/**
 * The public page of a payment link. A visit (the form's POST) of a known link takes a token of the link's
 * own rate limit (its visitor's share first), then creates the order and answers 303 to its checkout page;
 * refused, it shows the page again with why: 400 (the amount or asset), 404 (no such link), 409 (deactivated,
 * completed, expired, or no asset live), 429 with Retry-After (too many submissions on this link this minute,
 * from this address or from all).
 */
export const PayHandlers = HttpApiBuilder.group(FacetApi, "pay", (handlers) =>
  Effect.gen(function* () {
    const links = yield* PaymentLinks
    const limiter = yield* RateLimiter
    return handlers
      .handle("page", ({ path }) =>
        links.page(path.payment_link_id).pipe(
          Effect.map(({ view }) =>
            // a link that takes no visit says why, with the status a visit would get
            page(renderPayPage(view), Option.isSome(view.closed) ? 409 : 200)
          ),
          Effect.catchTag("PaymentLinkNotFound", () => Effect.succeed(page(NOT_FOUND, 404)))
        )
      )
      .handle("visit", ({ path, payload }) =>
        Effect.gen(function* () {
          const loaded = yield* links.page(path.payment_link_id)
          const { view } = loaded
          const request = yield* HttpServerRequest.HttpServerRequest
          const wait = yield* limiter.takeLinkVisit(
            path.payment_link_id,
            Option.getOrElse(request.remoteAddress, () => "unknown")
          )
          if (Option.isSome(wait)) {
            return page(
              renderPayPage(view, `Too many payments are being started on this link: try again in ${wait.value} s.`),
              429,
              { "retry-after": String(wait.value) }
            )
          }
          return yield* links.visit(loaded, payload).pipe(
            Effect.map((order) =>
              HttpServerResponse.empty({
                status: 303,
                headers: { ...SECURE, location: `/checkout/${order.order_id}` }
              })
            ),
            Effect.catchTags({
              InvalidPaymentLinkVisit: (e) => Effect.succeed(page(renderPayPage(view, e.message, payload.amount), 400)),
              InvalidOrderRequest: (e) => Effect.succeed(page(renderPayPage(view, e.message, payload.amount), 400)),
              PaymentLinkClosed: (e) => Effect.succeed(page(renderPayPage({ ...view, closed: Option.some(e) }), 409))
            })
          )
        }).pipe(Effect.catchTag("PaymentLinkNotFound", () => Effect.succeed(page(NOT_FOUND, 404))))
      )
      .handle("stylesheet", () =>
        Effect.succeed(HttpServerResponse.text(PAY_CSS, { contentType: "text/css; charset=utf-8", headers: SECURE }))
      )
  })
)
