import { HttpApiBuilder, HttpRouter, UrlParams } from "@effect/platform"
import { Effect, Redacted } from "effect"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { can } from "../../src/console/console-roles.js"
import { ApiKeys } from "../../src/merchants/api-keys.js"
import { ALL_SCOPES } from "../../src/merchants/principal.js"
import { WebhookAdmin } from "../../src/webhooks/webhook-admin.js"
import { keysPage, messagePage, webhooksPage } from "./console-pages.js"
import { actorOf, allowed, ConsoleGuards, fieldOf, formParams, htmlResponse, IdPath } from "./route-kit.js"

/**
 * What the merchant's backend is given: API keys (a new one shown once, asking for the password), the
 * webhook signing secret, and the webhook deliveries that are failing, with a replay.
 */
export const IntegrationRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { reconfirm, signedIn, signedForm } = yield* ConsoleGuards
    const keys = yield* ApiKeys
    const webhookAdmin = yield* WebhookAdmin

    const keysView = (
      session: ConsoleSession,
      shownOnce?: { readonly what: string; readonly value: string },
      message?: string,
      status = 200
    ) =>
      Effect.map(keys.list(session.merchantId), (list) =>
        htmlResponse(keysPage(session, list, shownOnce, message), status)
      )
    yield* router.get(
      "/console/keys",
      signedIn((session) => keysView(session))
    )
    // not signedForm: the scopes are a repeated field, read from the whole form
    yield* router.post(
      "/console/keys",
      signedIn((session) =>
        Effect.gen(function* () {
          const params = yield* formParams
          const field = fieldOf(params)
          if (field("csrf") !== session.csrfToken)
            return htmlResponse(
              messagePage(
                "Refused",
                "This form is stale or did not come from the console: nothing was changed.",
                session
              ),
              403
            )
          if (!can(session.role, "manage"))
            return htmlResponse(
              messagePage("Not allowed", `A ${session.role} cannot create keys: nothing was changed.`, session),
              403
            )
          const scopes = UrlParams.getAll(params, "scope").filter((scope) =>
            ALL_SCOPES.some((known) => known === scope)
          )
          if (scopes.length === 0) return yield* keysView(session, undefined, "Choose at least one scope.", 400)
          const label = field("label").trim() === "" ? "console" : field("label").trim().slice(0, 80)
          // a key acts for the merchant without a password: minting one asks for it, and the key remembers its minter
          const confirmed = yield* Effect.either(reconfirm(session, field, "created"))
          if (confirmed._tag === "Left")
            return yield* keysView(session, undefined, confirmed.left.message, confirmed.left.status)
          const issued = yield* keys.issue(session.merchantId, scopes, label, yield* actorOf(session), session.userId)
          yield* Effect.logInfo(`console: ${session.loginName} created API key ${issued.id} (${scopes.join(", ")})`)
          return yield* keysView(session, {
            what: `Your new API key "${label}" (${scopes.join(", ")})`,
            value: Redacted.value(issued.key)
          })
        })
      )
    )
    yield* router.post(
      "/console/keys/:id/revoke",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            const revoked = yield* keys.revoke(session.merchantId, id, yield* actorOf(session))
            if (!revoked) return htmlResponse(messagePage("Not found", "There is no such active key.", session), 404)
            yield* Effect.logInfo(`console: ${session.loginName} revoked API key ${id}`)
            return yield* keysView(session, undefined, "The key is revoked: it no longer works.")
          })
        )
      )
    )
    yield* router.post(
      "/console/webhook-secret",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const secret = yield* keys.rotateWebhookSecret(session.merchantId, yield* actorOf(session))
            yield* Effect.logInfo(`console: ${session.loginName} rotated the webhook secret`)
            return yield* keysView(session, {
              what: "Your new webhook secret (FACET_WEBHOOK_SECRET)",
              value: Redacted.value(secret)
            })
          })
        )
      )
    )

    const webhooksView = (session: ConsoleSession, message?: string) =>
      Effect.map(Effect.orDie(webhookAdmin.problems("problems", session.merchantId)), (problems) =>
        htmlResponse(webhooksPage(session, problems, message))
      )
    yield* router.get(
      "/console/webhooks",
      signedIn((session) => webhooksView(session))
    )
    yield* router.post(
      "/console/webhooks/replay",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.flatMap(Effect.orDie(webhookAdmin.replay({ merchantId: session.merchantId })), (n) =>
            webhooksView(session, `${n} deliver${n === 1 ? "y" : "ies"} due again now.`)
          )
        )
      )
    )
  })
)
