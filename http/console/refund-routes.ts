import { HttpApiBuilder, HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { Refunds } from "../../custody/refunds.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { ConsoleRefusal } from "../../src/console/console-refusal.js"
import { CreateRefundRequest } from "../../src/domain/refund.js"
import { categorized } from "../error-statuses.js"
import { messagePage } from "./console-pages.js"
import { refundsPage } from "./refund-pages.js"
import { actorOf, allowed, ConsoleGuards, htmlResponse, IdPath, queryParam } from "./route-kit.js"

/**
 * Refunds in the console: the list (of one order with `?order=`), a new refund (its claim link shown once),
 * a new link for an unclaimed one, a cancellation. Their withdrawals are decided on the withdrawals page.
 */
export const RefundRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn, signedForm } = yield* ConsoleGuards
    const refunds = yield* Refunds

    const refundsView = (
      session: ConsoleSession,
      orderId: string,
      message?: string,
      status = 200,
      shown?: { readonly refundId: string; readonly claimUrl: string }
    ) =>
      Effect.gen(function* () {
        const list =
          orderId === ""
            ? yield* refunds.list(session.merchantId, { limit: 100, offset: 0 })
            : yield* refunds
                .listForOrder(session.merchantId, orderId, { limit: 100, offset: 0 })
                .pipe(Effect.catchTag("OrderNotFound", () => Effect.succeed({ total: 0, items: [] })))
        return htmlResponse(refundsPage(session, list.items, list.total, { orderId }, shown, message), status)
      })

    /** The failures named by the services as this page shows them: their HTTP category and message. */
    const refused = (session: ConsoleSession, orderId: string) => ({
      ConsoleRefusal: (refusal: ConsoleRefusal) => refundsView(session, orderId, refusal.message, refusal.status),
      BadRequest: (e: { readonly error: string }) => refundsView(session, orderId, e.error, 400),
      Forbidden: (e: { readonly error: string }) => refundsView(session, orderId, e.error, 403),
      NotFound: (e: { readonly error: string }) => refundsView(session, orderId, e.error, 404),
      Conflict: (e: { readonly error: string }) => refundsView(session, orderId, e.error, 409),
      ServiceUnavailable: (e: { readonly error: string }) => refundsView(session, orderId, e.error, 503)
    })

    yield* router.get(
      "/console/refunds",
      signedIn((session) => Effect.flatMap(queryParam("order"), (orderId) => refundsView(session, orderId.trim())))
    )
    yield* router.post(
      "/console/refunds",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const orderId = field("order_id").trim()
            const [chain, currency] = field("asset").trim() === "" ? [] : field("asset").trim().toUpperCase().split("-")
            const optional = (value: string | undefined) => (value === undefined || value === "" ? undefined : value)
            const request = yield* Schema.decodeUnknown(CreateRefundRequest)(
              Object.fromEntries(
                Object.entries({
                  chain: optional(chain),
                  currency: optional(currency),
                  amount: optional(field("amount").trim()),
                  reason: optional(field("reason").trim())
                }).filter(([, v]) => v !== undefined)
              )
            ).pipe(
              Effect.mapError(
                () =>
                  new ConsoleRefusal({
                    status: 400,
                    message:
                      "Give the order, an asset such as TRC20-USDT (or none), and an amount such as 12.5 (or none)."
                  })
              )
            )
            const actor = yield* actorOf(session)
            const created = yield* refunds.create(session.merchantId, orderId, request, Option.none(), {
              actor,
              consoleUserId: session.userId
            })
            return yield* refundsView(
              session,
              orderId,
              `Refund ${created.refund_id} created: ${created.amount} ${created.currency} locked until the customer claims it.`,
              201,
              { refundId: created.refund_id, claimUrl: created.claim_url ?? "" }
            )
          }).pipe(categorized, Effect.catchTags(refused(session, field("order_id").trim())))
        )
      )
    )
    yield* router.post(
      "/console/refunds/:id/cancel",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            const cancelled = yield* refunds.cancel(session.merchantId, id, yield* actorOf(session))
            return yield* refundsView(
              session,
              "",
              `Refund ${id} cancelled: its link no longer works and ${cancelled.amount} ${cancelled.currency} is available again.`
            )
          }).pipe(
            categorized,
            Effect.catchTags({
              Conflict: (e) => refundsView(session, "", e.error, 409),
              NotFound: () =>
                Effect.succeed(htmlResponse(messagePage("Not found", "There is no such refund.", session), 404))
            })
          )
        )
      )
    )
    yield* router.post(
      "/console/refunds/:id/link",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            const relinked = yield* refunds.newLink(session.merchantId, id, yield* actorOf(session))
            return yield* refundsView(
              session,
              "",
              `A new claim link for ${id}: the previous one no longer works.`,
              200,
              {
                refundId: id,
                claimUrl: relinked.claim_url ?? ""
              }
            )
          }).pipe(
            categorized,
            Effect.catchTags({
              Conflict: (e) => refundsView(session, "", e.error, 409),
              NotFound: () =>
                Effect.succeed(htmlResponse(messagePage("Not found", "There is no such refund.", session), 404))
            })
          )
        )
      )
    )
  })
)
