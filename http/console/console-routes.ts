import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { Effect, Option, Redacted, Schema } from "effect"
import { Collections } from "../../custody/collections.js"
import { WalletPortfolioViews } from "../../custody/wallet-portfolio.js"
import { DepositAddresses } from "../../src/deposits/deposit-addresses.js"
import { WithdrawalDecisions } from "../../custody/withdrawal-decisions.js"
import { WithdrawalStore } from "../../custody/withdrawal-store.js"
import { AppConfig } from "../../src/config.js"
import { ConsoleAccounts, type ConsoleSession } from "../../src/console/console-accounts.js"
import { newTotpSecret, totpUri } from "../../src/console/totp.js"
import QRCode from "qrcode"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import { Chain } from "../../src/domain/chain.js"
import { ApiKeys } from "../../src/merchants/api-keys.js"
import { ALL_SCOPES } from "../../src/merchants/principal.js"
import { Orders } from "../../src/orders/orders.js"
import { Transactions } from "../../src/transactions/transactions.js"
import { WebhookAdmin } from "../../src/webhooks/webhook-admin.js"
import {
  assetsPage,
  balancesPage,
  collectPage,
  depositAddressesPage,
  CONSOLE_CSP,
  CONSOLE_CSS,
  keysPage,
  loginPage,
  messagePage,
  ordersPage,
  securityPage,
  setupPage,
  transactionsPage,
  webhooksPage,
  withdrawalsPage
} from "./console-pages.js"

const COOKIE = "facet_console"
const SECURE_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
}

const html = (body: string, status = 200) => HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: SECURE_HEADERS })
const seeOther = (location: string) => HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store" } })

/** The submitted form's fields (application/x-www-form-urlencoded). */
const formFields = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
  return (name: string) => Option.getOrElse(UrlParams.getFirst(params, name), () => "")
})

const IdPath = Schema.Struct({ id: Schema.String })

/**
 * `/console`: the merchant owner's pages, on the same services as `/v1` (portfolio, withdrawals and their
 * decisions). Sessions live in an HttpOnly, SameSite=Strict cookie (Secure behind https); every form
 * carries the session's CSRF token and a POST without it changes nothing; the API key never reaches the
 * browser. Another merchant's withdrawal in a URL is not found.
 */
export const ConsoleRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const accounts = yield* ConsoleAccounts
    const portfolio = yield* WalletPortfolioViews
    const withdrawals = yield* WithdrawalStore
    const decisions = yield* WithdrawalDecisions
    const orders = yield* Orders
    const transactions = yield* Transactions
    const catalog = yield* AssetCatalog
    const keys = yield* ApiKeys
    const webhookAdmin = yield* WebhookAdmin
    const depositAddresses = yield* DepositAddresses
    const collections = yield* Collections
    const secure = (yield* AppConfig).baseUrl.startsWith("https:")

    const withCookie = (response: HttpServerResponse.HttpServerResponse, value: string, maxAgeSeconds: number) =>
      HttpServerResponse.unsafeSetCookie(response, COOKIE, value, { httpOnly: true, sameSite: "strict", secure, path: "/console", maxAge: `${maxAgeSeconds} seconds` })

    const currentSession = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => accounts.session(request.cookies[COOKIE]))

    /** The page behind a session; without one, the login page. */
    const signedIn = <E, R>(use: (session: ConsoleSession) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.flatMap(currentSession, Option.match({ onNone: () => Effect.succeed(seeOther("/console/login")), onSome: use }))

    /** A state-changing form: a session and its CSRF token, or nothing happens. */
    const signedForm = <E, R>(use: (session: ConsoleSession, field: (name: string) => string) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      signedIn((session) =>
        Effect.flatMap(formFields, (field) =>
          field("csrf") !== session.csrfToken
            ? Effect.succeed(html(messagePage("Refused", "This form is stale or did not come from the console (no valid CSRF token): nothing was changed.", session), 403))
            : use(session, field)))

    const withdrawalsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.map(withdrawals.list(session.merchantId, { limit: 100, offset: 0 }), (list) => html(withdrawalsPage(session, list.items, message), status))

    const decide = (decision: "APPROVED" | "REJECTED" | "CANCELLED") =>
      signedForm((session, field) =>
        Effect.gen(function*() {
          const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
          const request = yield* HttpServerRequest.HttpServerRequest
          if (decision === "APPROVED") yield* accounts.confirmPassword(session.userId, field("password"), field("code"))
          if (decision === "REJECTED" && field("reason").trim() === "") {
            return yield* withdrawalsView(session, "A rejection needs a reason.", 400)
          }
          yield* decisions.decide(id, decision, {
            by: session.loginName,
            from: `console ${Option.getOrElse(request.remoteAddress, () => "unknown")}`,
            reason: field("reason").trim() === "" ? undefined : field("reason").trim()
          }, session.merchantId)
          return yield* withdrawalsView(session, `Withdrawal ${id} ${decision.toLowerCase()}.`)
        }).pipe(
          Effect.catchTags({
            ConsoleRefusal: (refusal) => withdrawalsView(session, refusal.message, refusal.status),
            NotFound: () => Effect.succeed(html(messagePage("Not found", "There is no such withdrawal.", session), 404)),
            Conflict: (conflict) => withdrawalsView(session, conflict.error, 409)
          })
        ))

    yield* router.get("/console-assets/console.css", Effect.succeed(HttpServerResponse.text(CONSOLE_CSS, { contentType: "text/css; charset=utf-8", headers: SECURE_HEADERS })))
    yield* router.get("/console", Effect.map(currentSession, (s) => seeOther(Option.isSome(s) ? "/console/withdrawals" : "/console/login")))

    yield* router.get("/console/setup", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const consoleToken = new URL(request.url, "http://console").searchParams.get("token") ?? ""
      return yield* accounts.setupOffer(consoleToken).pipe(
        Effect.map((offer) => html(setupPage(offer, consoleToken))),
        Effect.catchTag("ConsoleRefusal", (refusal) => Effect.succeed(html(messagePage("Setup link not usable", refusal.message), refusal.status)))
      )
    }))
    yield* router.post("/console/setup", Effect.gen(function*() {
      const field = yield* formFields
      return yield* accounts.setup(field("token"), field("login_name"), field("password")).pipe(
        Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, 12 * 3600)),
        Effect.catchTag("ConsoleRefusal", (refusal) =>
          accounts.setupOffer(field("token")).pipe(
            Effect.map((offer) => html(setupPage(offer, field("token"), refusal.message), refusal.status)),
            Effect.catchTag("ConsoleRefusal", (gone) => Effect.succeed(html(messagePage("Setup link not usable", gone.message), gone.status)))
          ))
      )
    }))

    yield* router.get("/console/login", Effect.succeed(html(loginPage())))
    yield* router.post("/console/login", Effect.gen(function*() {
      const field = yield* formFields
      const request = yield* HttpServerRequest.HttpServerRequest
      const address = Option.getOrElse(request.remoteAddress, () => "unknown")
      return yield* accounts.login(field("login_name"), field("password"), address, field("code")).pipe(
        Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, 12 * 3600)),
        Effect.catchTag("ConsoleRefusal", (refusal) => Effect.succeed(html(loginPage(refusal.message), refusal.status)))
      )
    }))
    yield* router.post("/console/logout", signedForm(() =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* accounts.logout(request.cookies[COOKIE])
        return withCookie(seeOther("/console/login"), "", 0)
      })))

    yield* router.get("/console/balances", signedIn((session) =>
      Effect.map(portfolio.portfolio(session.merchantId), (p) => html(balancesPage(session, p)))))
    yield* router.get("/console/withdrawals", signedIn((session) => withdrawalsView(session)))
    yield* router.post("/console/withdrawals/:id/approve", decide("APPROVED"))
    yield* router.post("/console/withdrawals/:id/reject", decide("REJECTED"))
    yield* router.post("/console/withdrawals/:id/cancel", decide("CANCELLED"))

    yield* router.get("/console/orders", signedIn((session) =>
      Effect.map(orders.list(session.merchantId, { page: 1, size: 100 }), (list) => html(ordersPage(session, list.items, list.total)))))
    yield* router.get("/console/transactions", signedIn((session) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const q = new URL(request.url, "http://console").searchParams.get("q") ?? ""
        const found = yield* transactions.search(session.merchantId, { q, limit: 100, offset: 0 })
        return html(transactionsPage(session, q, found.items, found.total))
      })))

    const assetsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.map(catalog.policies(session.merchantId), (policies) => html(assetsPage(session, policies, message), status))
    yield* router.get("/console/assets", signedIn((session) => assetsView(session)))
    yield* router.post("/console/assets/enable", signedForm((session, field) => {
      const [chain, currency] = field("asset_key").split("-")
      return Schema.decodeUnknown(Chain)(chain).pipe(
        Effect.flatMap((c) => catalog.enroll(session.merchantId, { chain: c, currency: currency ?? "", source: "console" })),
        Effect.flatMap((enabled) => assetsView(session, `${enabled.asset_key} is enabled.`)),
        Effect.catchAll(() => assetsView(session, `${field("asset_key")} cannot be enabled.`, 400))
      )
    }))

    const keysView = (session: ConsoleSession, shownOnce?: { readonly what: string; readonly value: string }, message?: string, status = 200) =>
      Effect.map(keys.list(session.merchantId), (list) => html(keysPage(session, list, shownOnce, message), status))
    yield* router.get("/console/keys", signedIn((session) => keysView(session)))
    yield* router.post("/console/keys", signedIn((session) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const params = yield* request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
        const field = (name: string) => Option.getOrElse(UrlParams.getFirst(params, name), () => "")
        if (field("csrf") !== session.csrfToken) return html(messagePage("Refused", "This form is stale or did not come from the console: nothing was changed.", session), 403)
        const scopes = UrlParams.getAll(params, "scope").filter((scope) => ALL_SCOPES.some((known) => known === scope))
        if (scopes.length === 0) return yield* keysView(session, undefined, "Choose at least one scope.", 400)
        const label = field("label").trim() === "" ? "console" : field("label").trim().slice(0, 80)
        const issued = yield* keys.issue(session.merchantId, scopes, label)
        yield* Effect.logInfo(`console: ${session.loginName} created API key ${issued.id} (${scopes.join(", ")})`)
        return yield* keysView(session, { what: `Your new API key "${label}" (${scopes.join(", ")})`, value: Redacted.value(issued.key) })
      })))
    yield* router.post("/console/keys/:id/revoke", signedForm((session) =>
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
        const revoked = yield* keys.revoke(session.merchantId, id)
        if (!revoked) return html(messagePage("Not found", "There is no such active key.", session), 404)
        yield* Effect.logInfo(`console: ${session.loginName} revoked API key ${id}`)
        return yield* keysView(session, undefined, "The key is revoked: it no longer works.")
      })))
    yield* router.post("/console/webhook-secret", signedForm((session) =>
      Effect.gen(function*() {
        const secret = yield* keys.rotateWebhookSecret(session.merchantId)
        yield* Effect.logInfo(`console: ${session.loginName} rotated the webhook secret`)
        return yield* keysView(session, { what: "Your new webhook secret (FACET_WEBHOOK_SECRET)", value: Redacted.value(secret) })
      })))

    yield* router.get("/console/deposit-addresses", signedIn((session) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const user = (new URL(request.url, "http://console").searchParams.get("user") ?? "").trim()
        const found = yield* depositAddresses.list(session.merchantId, { external_user_id: user === "" ? undefined : user, limit: 100, offset: 0 })
        return html(depositAddressesPage(session, user, found.items, found.total))
      })))

    const collectView = (session: ConsoleSession, assetKey: string, message?: string, status = 200) =>
      Effect.gen(function*() {
        const policies = yield* catalog.policies(session.merchantId)
        const chosen = policies.find((p) => p.asset_key === assetKey && p.actions.collect) ?? policies.find((p) => p.actions.collect)
        const wallets = chosen === undefined ? [] : (yield* portfolio.detail(session.merchantId, chosen.asset_key, { limit: 100 }).pipe(Effect.orDie)).items
        return html(collectPage(session, policies, chosen?.asset_key ?? "", wallets, message), status)
      })
    yield* router.get("/console/collect", signedIn((session) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        collectView(session, new URL(request.url, "http://console").searchParams.get("asset") ?? ""))))
    yield* router.post("/console/collect", signedForm((session, field) =>
      collections.request(session.merchantId, field("asset"), { from_wallet_id: field("wallet_id") }).pipe(
        Effect.tap((op) => Effect.logInfo(`console: ${session.loginName} swept ${op.from_address} (${op.operation_id})`)),
        Effect.flatMap((op) => collectView(session, field("asset"), `Sweep ${op.operation_id} started: ${op.amount} ${op.currency} (${op.status}).`)),
        Effect.catchTags({
          BadRequest: (e) => collectView(session, field("asset"), e.error, 400),
          NotFound: (e) => collectView(session, field("asset"), e.error, 404),
          Conflict: (e) => collectView(session, field("asset"), e.error, 409),
          ServiceUnavailable: (e) => collectView(session, field("asset"), e.error, 503)
        })
      )))

    const securityView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function*() {
        if (session.totp) return html(securityPage(session, undefined, message), status)
        const secret = newTotpSecret()
        const qrSvg = yield* Effect.promise(() => QRCode.toString(totpUri(secret, session.loginName), { type: "svg", margin: 2 }))
        return html(securityPage(session, { secret, qrSvg }, message), status)
      })
    yield* router.get("/console/security", signedIn((session) => securityView(session)))
    yield* router.post("/console/security/totp", signedForm((session, field) =>
      accounts.enrollTotp(session.userId, field("secret"), field("code")).pipe(
        Effect.flatMap(() => Effect.logInfo(`console: ${session.loginName} turned on TOTP`)),
        Effect.as(html(securityPage({ ...session, totp: true }, undefined, "The second factor is on."))),
        Effect.catchTag("ConsoleRefusal", (refusal) => securityView(session, refusal.message, refusal.status))
      )))

    const webhooksView = (session: ConsoleSession, message?: string) =>
      Effect.map(Effect.orDie(webhookAdmin.problems("problems", session.merchantId)), (problems) => html(webhooksPage(session, problems, message)))
    yield* router.get("/console/webhooks", signedIn((session) => webhooksView(session)))
    yield* router.post("/console/webhooks/replay", signedForm((session) =>
      Effect.flatMap(Effect.orDie(webhookAdmin.replay({ merchantId: session.merchantId })), (n) => webhooksView(session, `${n} deliver${n === 1 ? "y" : "ies"} due again now.`))))
  })
)
