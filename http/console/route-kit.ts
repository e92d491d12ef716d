import { HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import type { AuditActor } from "../../src/audit/audit-log.js"
import { AppConfig } from "../../src/config.js"
import { ConsoleAccounts, type ConsoleSession } from "../../src/console/console-accounts.js"
import { type Capability, can } from "../../src/console/console-roles.js"
import { type Html, pageHeaders } from "../html.js"
import { CONSOLE_CSP, messagePage } from "./console-pages.js"

/**
 * What every console route group shares: the session cookie, the CSRF check on forms, the role check,
 * and the page response with the console's security headers.
 */

export const COOKIE = "facet_console"
export const SECURE_HEADERS = pageHeaders(CONSOLE_CSP)

/** How long a session cookie lasts once signed in (setup, login, an accepted invite). */
export const SESSION_SECONDS = 12 * 3600

/** A page as the response, with the console's headers. */
export const htmlResponse = (page: Html, status = 200) =>
  HttpServerResponse.text(page.text, { status, contentType: "text/html; charset=utf-8", headers: SECURE_HEADERS })

export const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store" } })

/** The submitted form (application/x-www-form-urlencoded); an unreadable body is an empty form. */
export const formParams = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
  request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
)

/** One field of a submitted form, "" when absent. */
export const fieldOf = (params: UrlParams.UrlParams) => (name: string) =>
  Option.getOrElse(UrlParams.getFirst(params, name), () => "")

/** The submitted form's fields. */
export const formFields = Effect.map(formParams, fieldOf)

/** One query parameter of this request's URL, "" when absent. */
export const queryParam = (name: string) =>
  Effect.map(
    HttpServerRequest.HttpServerRequest,
    (request) => new URL(request.url, "http://console").searchParams.get(name) ?? ""
  )

export const IdPath = Schema.Struct({ id: Schema.String })

/** This request's address, as the sign-in throttle and the audit log see it. */
export const remoteAddress = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

/** Who acts, for the audit log: the session's user, from this request's address and browser. */
export const actorOf = (session: ConsoleSession) =>
  Effect.map(
    HttpServerRequest.HttpServerRequest,
    (request): AuditActor => ({
      kind: "console_user",
      name: session.loginName,
      from: remoteAddress(request),
      userAgent: request.headers["user-agent"] ?? ""
    })
  )

/** A form only some roles may send: others get 403 and nothing changes. */
export const allowed = <E, R>(
  session: ConsoleSession,
  capability: Capability,
  use: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  can(session.role, capability)
    ? use
    : Effect.succeed(
        htmlResponse(messagePage("Not allowed", `A ${session.role} cannot do this: nothing was changed.`, session), 403)
      )

/** The session guards, built once per route group from the accounts and whether the console is behind https. */
export const ConsoleGuards = Effect.gen(function* () {
  const accounts = yield* ConsoleAccounts
  const secure = (yield* AppConfig).baseUrl.startsWith("https:")

  /** The password (and TOTP code) asked again on this form, counted against this request's address. */
  const reconfirm = (session: ConsoleSession, field: (name: string) => string, done?: string) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      accounts.confirmPassword(session.userId, field("password"), field("code"), remoteAddress(request), done)
    )

  /** The session cookie: HttpOnly, SameSite=Strict, Secure behind https, only for /console. */
  const withCookie = (response: HttpServerResponse.HttpServerResponse, value: string, maxAgeSeconds: number) =>
    HttpServerResponse.unsafeSetCookie(response, COOKIE, value, {
      httpOnly: true,
      sameSite: "strict",
      secure,
      path: "/console",
      maxAge: `${maxAgeSeconds} seconds`
    })

  const currentSession = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    accounts.session(request.cookies[COOKIE])
  )

  /** The page behind a session; without one, the login page. */
  const signedIn = <E, R>(
    use: (session: ConsoleSession) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
    Effect.flatMap(
      currentSession,
      Option.match({ onNone: () => Effect.succeed(seeOther("/console/login")), onSome: use })
    )

  /** A state-changing form: a session and its CSRF token, or nothing happens. */
  const signedForm = <E, R>(
    use: (
      session: ConsoleSession,
      field: (name: string) => string
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) =>
    signedIn((session) =>
      Effect.flatMap(formFields, (field) =>
        field("csrf") !== session.csrfToken
          ? Effect.succeed(
              htmlResponse(
                messagePage(
                  "Refused",
                  "This form is stale or did not come from the console (no valid CSRF token): nothing was changed.",
                  session
                ),
                403
              )
            )
          : use(session, field)
      )
    )

  return { accounts, reconfirm, withCookie, currentSession, signedIn, signedForm }
})
