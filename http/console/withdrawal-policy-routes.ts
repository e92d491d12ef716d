import { HttpApiBuilder, HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { AddressBook } from "../../custody/address-book.js"
import { formatDuration, WithdrawalPolicy } from "../../custody/withdrawal-policy.js"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { PolicyClock } from "../../src/policy-clock.js"
import { addressBookPage, policyPage } from "./policy-pages.js"
import { actorOf, allowed, ConsoleGuards, htmlResponse, IdPath } from "./route-kit.js"
import { categorized } from "../error-statuses.js"

/**
 * Where withdrawals may go and how many approve them: the address book (a human adds and removes, with
 * the password and TOTP asked again) and the withdrawal policy (tightening at once, loosening after the
 * cooling-off, pending and cancellable until then).
 */
export const WithdrawalPolicyRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { reconfirm, signedIn, signedForm } = yield* ConsoleGuards
    const addressBook = yield* AddressBook
    const policy = yield* WithdrawalPolicy
    const catalog = yield* AssetCatalog
    const clock = yield* PolicyClock

    const addressBookView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        const list = yield* addressBook.list(session.merchantId, { limit: 100, offset: 0 })
        return htmlResponse(
          addressBookPage(
            session,
            list.items,
            list.address_book === "on",
            formatDuration(list.cooling_off_seconds),
            message
          ),
          status
        )
      })
    yield* router.get(
      "/console/address-book",
      signedIn((session) => addressBookView(session))
    )
    yield* router.post(
      "/console/address-book",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            yield* reconfirm(session, field, "added")
            const entry = yield* addressBook.add(
              session.merchantId,
              { chain: field("chain"), address: field("address"), label: field("label") },
              yield* actorOf(session)
            )
            return yield* addressBookView(session, `${entry.address} is added; usable from ${entry.usable_from}.`)
          }).pipe(
            // the failures named by the services as the console shows them: their HTTP category
            categorized,
            Effect.catchTags({
              ConsoleRefusal: (refusal) => addressBookView(session, refusal.message, refusal.status),
              BadRequest: (e) => addressBookView(session, e.error, 400),
              Conflict: (e) => addressBookView(session, e.error, 409)
            })
          )
        )
      )
    )
    yield* router.post(
      "/console/address-book/:id/remove",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            yield* reconfirm(session, field, "removed")
            yield* addressBook.remove(session.merchantId, id, yield* actorOf(session))
            return yield* addressBookView(session, "The entry is removed: no withdrawal can go there now.")
          }).pipe(
            // the failures named by the services as the console shows them: their HTTP category
            categorized,
            Effect.catchTags({
              ConsoleRefusal: (refusal) => addressBookView(session, refusal.message, refusal.status),
              NotFound: (e) => addressBookView(session, e.error, 404)
            })
          )
        )
      )
    )

    const policyView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        yield* policy.settle(session.merchantId)
        const inForce = yield* policy.effective(session.merchantId)
        const changes = yield* policy.changes(session.merchantId)
        const assets = (yield* catalog.policies(session.merchantId))
          .filter((p) => p.merchant_enabled && p.actions.withdraw)
          .map((p) => p.asset_key)
        return htmlResponse(policyPage(session, inForce, changes, assets, yield* clock.now, message), status)
      })
    yield* router.get(
      "/console/policy",
      signedIn((session) => policyView(session))
    )
    yield* router.post(
      "/console/policy",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            yield* reconfirm(session, field, "changed")
            const asset = field("asset")
            const requests = [
              ...["address_book", "refund_address_book", "cooling_off", "quorum"].map((setting) => ({
                setting,
                value: field(setting).trim()
              })),
              ...["per_tx", "per_day", "quorum_above"].map((kind) => ({
                setting: `${kind}:${asset}`,
                value: field(kind).trim()
              }))
            ].filter((r) => r.value !== "")
            if (requests.length === 0)
              return yield* policyView(session, "Nothing to change: every field was empty.", 400)
            const outcomes = yield* policy.change(session.merchantId, requests, yield* actorOf(session))
            return yield* policyView(
              session,
              outcomes.length === 0
                ? "Nothing changed: those values are already in force."
                : outcomes
                    .map(
                      (o) =>
                        `${o.setting}: ${o.from} → ${o.to} ${o.pending ? `from ${o.effectiveAt.toISOString()} (a loosening waits for the cooling-off)` : "now"}`
                    )
                    .join("; ")
            )
          }).pipe(
            // the failures named by the services as the console shows them: their HTTP category
            categorized,
            Effect.catchTags({
              ConsoleRefusal: (refusal) => policyView(session, refusal.message, refusal.status),
              BadRequest: (e) => policyView(session, e.error, 400),
              NotFound: (e) => policyView(session, e.error, 404)
            })
          )
        )
      )
    )
    yield* router.post(
      "/console/policy/changes/:id/cancel",
      signedForm((session) =>
        allowed(
          session,
          "manage",
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.schemaPathParams(IdPath).pipe(Effect.orDie)
            yield* policy.cancelChange(session.merchantId, id, yield* actorOf(session))
            return yield* policyView(session, "The pending change is cancelled: it will not take effect.")
          }).pipe(
            categorized,
            Effect.catchTag("NotFound", (e) => policyView(session, e.error, 404))
          )
        )
      )
    )
  })
)
