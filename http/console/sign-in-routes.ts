import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { withRedactedAccessLog } from "../redacted-access-log.js"
import { Effect, Option } from "effect"
import QRCode from "qrcode"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { newTotpSecret, totpUri } from "../../src/console/totp.js"
import { raw } from "../html.js"
import { CONSOLE_CSS, loginPage, messagePage, securityPage, setupPage } from "./console-pages.js"
import {
  actorOf,
  COOKIE,
  ConsoleGuards,
  formFields,
  htmlResponse,
  queryParam,
  remoteAddress,
  SECURE_HEADERS,
  SESSION_SECONDS,
  seeOther
} from "./route-kit.js"

/**
 * Getting in and staying safe: the stylesheet, the owner's one-time setup link, log in and out, and the
 * second factor (TOTP) a user turns on for themself.
 */
export const SignInRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { accounts, withCookie, currentSession, signedIn, signedForm } = yield* ConsoleGuards

    yield* router.get(
      "/console-assets/console.css",
      Effect.succeed(
        HttpServerResponse.text(CONSOLE_CSS, { contentType: "text/css; charset=utf-8", headers: SECURE_HEADERS })
      )
    )
    yield* router.get(
      "/console",
      Effect.map(currentSession, (s) => seeOther(Option.isSome(s) ? "/console/withdrawals" : "/console/login"))
    )

    yield* router.get(
      "/console/setup",
      // the one-time setup token is in the query: never in the access log
      withRedactedAccessLog("/console/setup?token={token}")(
        Effect.gen(function* () {
          const consoleToken = yield* queryParam("token")
          return yield* accounts.setupOffer(consoleToken).pipe(
            Effect.map((offer) => htmlResponse(setupPage(offer, consoleToken))),
            Effect.catchTag("ConsoleRefusal", (refusal) =>
              Effect.succeed(htmlResponse(messagePage("Setup link not usable", refusal.message), refusal.status))
            )
          )
        })
      )
    )
    yield* router.post(
      "/console/setup",
      Effect.gen(function* () {
        const field = yield* formFields
        return yield* accounts.setup(field("token"), field("login_name"), field("password")).pipe(
          Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, SESSION_SECONDS)),
          Effect.catchTag("ConsoleRefusal", (refusal) =>
            accounts.setupOffer(field("token")).pipe(
              Effect.map((offer) => htmlResponse(setupPage(offer, field("token"), refusal.message), refusal.status)),
              Effect.catchTag("ConsoleRefusal", (gone) =>
                Effect.succeed(htmlResponse(messagePage("Setup link not usable", gone.message), gone.status))
              )
            )
          )
        )
      })
    )

    yield* router.get("/console/login", Effect.succeed(htmlResponse(loginPage())))
    yield* router.post(
      "/console/login",
      Effect.gen(function* () {
        const field = yield* formFields
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* accounts
          .login(
            field("login_name"),
            field("password"),
            remoteAddress(request),
            field("code"),
            request.headers["user-agent"] ?? ""
          )
          .pipe(
            Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, SESSION_SECONDS)),
            Effect.catchTag("ConsoleRefusal", (refusal) =>
              Effect.succeed(htmlResponse(loginPage(refusal.message), refusal.status))
            )
          )
      })
    )
    yield* router.post(
      "/console/logout",
      signedForm(() =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* accounts.logout(request.cookies[COOKIE])
          return withCookie(seeOther("/console/login"), "", 0)
        })
      )
    )

    const securityView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        if (session.totp) return htmlResponse(securityPage(session, undefined, message), status)
        const secret = newTotpSecret()
        const svg = yield* Effect.promise(() =>
          QRCode.toString(totpUri(secret, session.loginName), { type: "svg", margin: 2 })
        )
        // raw: an SVG the qrcode library drew here from our own otpauth URI, markup to place as it is
        return htmlResponse(securityPage(session, { secret, qrSvg: raw(svg) }, message), status)
      })
    yield* router.get(
      "/console/security",
      signedIn((session) => securityView(session))
    )
    yield* router.post(
      "/console/security/totp",
      signedForm((session, field) =>
        Effect.flatMap(actorOf(session), (actor) =>
          accounts.enrollTotp(session, field("secret"), field("code"), field("password"), actor.from ?? "unknown")
        ).pipe(
          Effect.flatMap(() => Effect.logInfo(`console: ${session.loginName} turned on TOTP`)),
          Effect.as(htmlResponse(securityPage({ ...session, totp: true }, undefined, "The second factor is on."))),
          Effect.catchTag("ConsoleRefusal", (refusal) => securityView(session, refusal.message, refusal.status))
        )
      )
    )
  })
)
