import { HttpApiBuilder, HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { AddressBook } from "../../custody/address-book.js"
import { WithdrawalDecisions } from "../../custody/withdrawal-decisions.js"
import { Withdrawals } from "../../custody/withdrawals.js"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { ConsoleRefusal } from "../../src/console/console-refusal.js"
import { CreateWithdrawalRequest } from "../../src/domain/withdrawal.js"
import { messagePage, withdrawalsPage } from "./console-pages.js"
import { actorOf, allowed, ConsoleGuards, htmlResponse, IdPath } from "./route-kit.js"
import { categorized } from "../error-statuses.js"

/**
 * Withdrawals and their approvals: the list, a new withdrawal (someone else approves it), and the
 * approve / reject / cancel decisions, approving with the password asked again. Another merchant's
 * withdrawal in a URL is not found.
 */
export const WithdrawalRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { reconfirm, signedIn, signedForm } = yield* ConsoleGuards
    const decisions = yield* WithdrawalDecisions
    const withdrawalService = yield* Withdrawals
    const catalog = yield* AssetCatalog
    const addressBook = yield* AddressBook

    const withdrawalsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        // a batch's items are on its own page: 500 of them would push every other withdrawal off this one
        const list = yield* withdrawalService.list(session.merchantId, { limit: 100, offset: 0, inBatch: false })
        const assets = (yield* catalog.policies(session.merchantId))
          .filter((p) => p.merchant_enabled && p.status === "live" && p.actions.withdraw)
          .map((p) => p.asset_key)
        const addresses = (yield* addressBook.list(session.merchantId, { limit: 100, offset: 0 })).items
        return htmlResponse(withdrawalsPage(session, list.items, message, { assets, addresses }), status)
      })

    const decide = (decision: "APPROVED" | "REJECTED" | "CANCELLED") =>
      signedForm((session, field) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
          const actor = yield* actorOf(session)
          if (decision === "APPROVED") yield* reconfirm(session, field)
          if (decision === "REJECTED" && field("reason").trim() === "") {
            return yield* withdrawalsView(session, "A rejection needs a reason.", 400)
          }
          const decided = yield* decisions.decide(
            id,
            decision,
            {
              kind: "console_user",
              by: session.loginName,
              userId: session.userId,
              from: actor.from ?? "unknown",
              userAgent: actor.userAgent,
              reason: field("reason").trim() === "" ? undefined : field("reason").trim()
            },
            session.merchantId
          )
          return yield* withdrawalsView(
            session,
            decided.status === "PENDING"
              ? `Your approval of ${id} is recorded: ${decided.approvals.length} of ${decided.required_approvals}; it waits for more.`
              : `Withdrawal ${id} ${decision.toLowerCase()}.`
          )
        }).pipe(
          // the failures named by the services as the console shows them: their HTTP category
          categorized,
          Effect.catchTags({
            ConsoleRefusal: (refusal) => withdrawalsView(session, refusal.message, refusal.status),
            NotFound: () =>
              Effect.succeed(htmlResponse(messagePage("Not found", "There is no such withdrawal.", session), 404)),
            Conflict: (conflict) => withdrawalsView(session, conflict.error, 409),
            Forbidden: (refused) => withdrawalsView(session, refused.error, 403)
          })
        )
      )

    yield* router.get(
      "/console/withdrawals",
      signedIn((session) => withdrawalsView(session))
    )
    yield* router.post(
      "/console/withdrawals",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const [chain, currency] = field("asset").split("-")
            const request = yield* Schema.decodeUnknown(CreateWithdrawalRequest)({
              chain,
              currency,
              amount: field("amount").trim(),
              to_address: field("to_address").trim()
            }).pipe(
              Effect.mapError(
                () =>
                  new ConsoleRefusal({
                    status: 400,
                    message: "Choose an asset and give an address and an amount such as 12.5."
                  })
              )
            )
            const actor = yield* actorOf(session)
            const created = yield* withdrawalService.create(session.merchantId, request, Option.none(), {
              actor,
              consoleUserId: session.userId
            })
            return yield* withdrawalsView(
              session,
              `Withdrawal ${created.withdrawal_id} requested: ${created.amount} ${created.currency}; it needs ${created.required_approvals} approval(s) from someone else.`,
              201
            )
          }).pipe(
            // the failures named by the services as the console shows them: their HTTP category
            categorized,
            Effect.catchTags({
              ConsoleRefusal: (refusal) => withdrawalsView(session, refusal.message, refusal.status),
              BadRequest: (e) => withdrawalsView(session, e.error, 400),
              Forbidden: (e) => withdrawalsView(session, e.error, 403),
              Conflict: (e) => withdrawalsView(session, e.error, 409),
              ServiceUnavailable: (e) => withdrawalsView(session, e.error, 503)
            })
          )
        )
      )
    )
    yield* router.post("/console/withdrawals/:id/approve", decide("APPROVED"))
    yield* router.post("/console/withdrawals/:id/reject", decide("REJECTED"))
    yield* router.post("/console/withdrawals/:id/cancel", decide("CANCELLED"))
  })
)
