import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { WalletPortfolioViews } from "../../custody/wallet-portfolio.js"
import { WithdrawalDecisions } from "../../custody/withdrawal-decisions.js"
import { WithdrawalStore } from "../../custody/withdrawal-store.js"
import { AppConfig } from "../../src/config.js"
import { ConsoleAccounts, type ConsoleSession } from "../../src/console/console-accounts.js"
import { balancesPage, CONSOLE_CSP, CONSOLE_CSS, loginPage, messagePage, setupPage, withdrawalsPage } from "./console-pages.js"

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
          if (decision === "APPROVED") yield* accounts.confirmPassword(session.userId, field("password"))
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
      return yield* accounts.login(field("login_name"), field("password"), address).pipe(
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
  })
)
