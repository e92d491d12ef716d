import { HttpApiBuilder, HttpRouter, UrlParams } from "@effect/platform"
import { Effect, Option, ParseResult, Schema } from "effect"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import { CreatePaymentLinkRequest } from "../../src/domain/payment-link.js"
import { PaymentLinks } from "../../src/payment-links/payment-links.js"
import { categorized } from "../error-statuses.js"
import { messagePage } from "./console-pages.js"
import { type NewLinkOffer, paymentLinkPage, paymentLinksPage } from "./payment-link-pages.js"
import { actorOf, allowed, ConsoleGuards, fieldOf, formParams, htmlResponse, IdPath } from "./route-kit.js"

/** A whole number as typed, as a number; anything else as typed, for the schema to refuse with its message. */
const wholeNumber = (typed: string): number | string => (/^\d{1,10}$/.test(typed) ? Number(typed) : typed)

/** The new-link form as a CreatePaymentLinkRequest (the fields left empty left out), for the API's own schema. */
const requestOf = (params: UrlParams.UrlParams) => {
  const field = (name: string) => fieldOf(params)(name).trim()
  const optional = (name: string, value: unknown = field(name)) => (field(name) === "" ? {} : { [name]: value })
  const assets = UrlParams.getAll(params, "asset").map((key) => {
    const [chain, currency] = key.split("-")
    return { chain, currency }
  })
  return {
    product_name: field("product_name"),
    ...optional("product_desc"),
    ...optional("amount"),
    ...optional("min_amount"),
    ...optional("max_amount"),
    ...(assets.length === 0 ? {} : { accepted_assets: assets }),
    ...optional("max_uses", wholeNumber(field("max_uses"))),
    ...(field("expires_on") === "" ? {} : { expires_at: `${field("expires_on")}T23:59:59Z` }),
    ...optional("order_expire_minutes", wholeNumber(field("order_expire_minutes"))),
    ...optional("return_url")
  }
}

/**
 * Payment links in the console: the list and a new link (owner and admin), a link's page with its orders,
 * and deactivating one. The forms carry the session's CSRF token; creating and deactivating are in the
 * audit log. Another merchant's link in a URL is not found.
 */
export const PaymentLinkRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn, signedForm } = yield* ConsoleGuards
    const links = yield* PaymentLinks
    const catalog = yield* AssetCatalog

    const listView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        const list = yield* links.list(session.merchantId, { limit: 100, offset: 0 })
        const offer: NewLinkOffer = {
          assets: (yield* catalog.policies(session.merchantId))
            .filter((p) => p.merchant_enabled && p.status === "live" && p.actions.checkout)
            .map((p) => p.asset_key)
        }
        return htmlResponse(paymentLinksPage(session, list.items, list.total, offer, message), status)
      })

    const linkView = (session: ConsoleSession, id: string, message?: string, status = 200) =>
      Effect.gen(function* () {
        const link = yield* links.get(session.merchantId, id)
        const orders = yield* links.ordersOf(session.merchantId, id, { page: 1, size: 100 })
        return htmlResponse(paymentLinkPage(session, link, orders.items, orders.total, message), status)
      })

    const notFound = (session: ConsoleSession) =>
      Effect.succeed(htmlResponse(messagePage("Not found", "There is no such payment link.", session), 404))

    yield* router.get(
      "/console/payment-links",
      signedIn((session) => listView(session))
    )
    yield* router.get(
      "/console/payment-links/:id",
      signedIn((session) =>
        Effect.flatMap(HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie), ({ id }) =>
          linkView(session, id).pipe(Effect.catchTag("PaymentLinkNotFound", () => notFound(session)))
        )
      )
    )
    // not signedForm: the assets are a repeated field, read from the whole form
    yield* router.post(
      "/console/payment-links",
      signedIn((session) =>
        Effect.gen(function* () {
          const params = yield* formParams
          if (fieldOf(params)("csrf") !== session.csrfToken)
            return htmlResponse(
              messagePage(
                "Refused",
                "This form is stale or did not come from the console (no valid CSRF token): nothing was changed.",
                session
              ),
              403
            )
          if (!can(session.role, "manage"))
            return htmlResponse(
              messagePage(
                "Not allowed",
                `A ${session.role} cannot create payment links: nothing was changed.`,
                session
              ),
              403
            )
          const decoded = Schema.decodeUnknownEither(CreatePaymentLinkRequest)(requestOf(params))
          if (decoded._tag === "Left") {
            const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
              .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
              .join("; ")
            return yield* listView(session, `Not created: ${issues}`, 400)
          }
          const created = yield* links.create(session.merchantId, decoded.right, Option.none(), yield* actorOf(session))
          return yield* listView(
            session,
            `Payment link created: ${created.link.url} — share it with your customers.`,
            201
          )
        }).pipe(
          categorized,
          Effect.catchTags({
            BadRequest: (e) => listView(session, `Not created: ${e.error}`, 400),
            Conflict: (e) => listView(session, e.error, 409)
          })
        )
      )
    )
    yield* router.post(
      "/console/payment-links/:id/deactivate",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            yield* links.deactivate(session.merchantId, id, yield* actorOf(session))
            return yield* linkView(session, id, "The link is deactivated: its page takes no more payments.")
          }).pipe(Effect.catchTag("PaymentLinkNotFound", () => notFound(session)))
        )
      )
    )
  })
)
