import { HttpApiBuilder, HttpRouter, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { ConsoleUsers } from "../../custody/console-users.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { PolicyClock } from "../../src/policy-clock.js"
import { messagePage } from "./console-pages.js"
import { invitePage, usersPage } from "./policy-pages.js"
import {
  actorOf,
  allowed,
  ConsoleGuards,
  formFields,
  htmlResponse,
  IdPath,
  queryParam,
  remoteAddress,
  SESSION_SECONDS,
  seeOther
} from "./route-kit.js"

/**
 * The people on a merchant's console: the owner invites with a one-time link and removes; the invited
 * person opens the link, chooses a password and is signed in.
 */
export const PeopleRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { withCookie, signedIn, signedForm } = yield* ConsoleGuards
    const users = yield* ConsoleUsers
    const clock = yield* PolicyClock

    const usersView = (
      session: ConsoleSession,
      invited?: { readonly url: string; readonly loginName: string },
      message?: string,
      status = 200
    ) =>
      Effect.gen(function* () {
        return htmlResponse(
          usersPage(session, yield* users.list(session.merchantId), yield* clock.now, invited, message),
          status
        )
      })
    yield* router.get(
      "/console/users",
      signedIn((session) => usersView(session))
    )
    yield* router.post(
      "/console/users/invite",
      signedForm((session, field) =>
        allowed(
          session,
          "people",
          Effect.gen(function* () {
            const invite = yield* users.invite(
              session.merchantId,
              { loginName: field("login_name"), role: field("role") },
              yield* actorOf(session)
            )
            return yield* usersView(session, invite, `${invite.loginName} is invited as ${invite.role}.`)
          }).pipe(
            Effect.catchTag("ConsoleRefusal", (refusal) =>
              usersView(session, undefined, refusal.message, refusal.status)
            )
          )
        )
      )
    )
    yield* router.post(
      "/console/users/:id/remove",
      signedForm((session) =>
        allowed(
          session,
          "people",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            yield* users.remove(session.merchantId, id, yield* actorOf(session))
            return yield* usersView(session, undefined, "The user is removed; their sessions have ended.")
          }).pipe(
            Effect.catchTag("ConsoleRefusal", (refusal) =>
              usersView(session, undefined, refusal.message, refusal.status)
            )
          )
        )
      )
    )

    yield* router.get(
      "/console/invite",
      Effect.gen(function* () {
        const token = yield* queryParam("token")
        return yield* users.inviteOffer(token).pipe(
          Effect.map((offer) => htmlResponse(invitePage(offer, token))),
          Effect.catchTag("ConsoleRefusal", (refusal) =>
            Effect.succeed(htmlResponse(messagePage("Invite link not usable", refusal.message), refusal.status))
          )
        )
      })
    )
    yield* router.post(
      "/console/invite",
      Effect.gen(function* () {
        const field = yield* formFields
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* users
          .accept(field("token"), field("password"), remoteAddress(request), request.headers["user-agent"] ?? "")
          .pipe(
            Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, SESSION_SECONDS)),
            Effect.catchTag("ConsoleRefusal", (refusal) =>
              users.inviteOffer(field("token")).pipe(
                Effect.map((offer) => htmlResponse(invitePage(offer, field("token"), refusal.message), refusal.status)),
                Effect.catchTag("ConsoleRefusal", (gone) =>
                  Effect.succeed(htmlResponse(messagePage("Invite link not usable", gone.message), gone.status))
                )
              )
            )
          )
      })
    )
  })
)
