import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { Effect, Option, Redacted, Schema } from "effect"
import { Collections } from "../../custody/collections.js"
import { WalletPortfolioViews } from "../../custody/wallet-portfolio.js"
import { DepositAddresses } from "../../src/deposits/deposit-addresses.js"
import { WithdrawalDecisions } from "../../custody/withdrawal-decisions.js"
import { WithdrawalStore } from "../../custody/withdrawal-store.js"
import { AddressBook } from "../../custody/address-book.js"
import { formatDuration, WithdrawalPolicy } from "../../custody/withdrawal-policy.js"
import { Withdrawals } from "../../custody/withdrawals.js"
import { AuditLog, type AuditActor, type AuditFilter } from "../../src/audit/audit-log.js"
import { type Capability, can } from "../../src/console/console-roles.js"
import { ConsoleUsers } from "../../custody/console-users.js"
import { CreateWithdrawalRequest } from "../../src/domain/withdrawal.js"
import { PolicyClock } from "../../src/policy-clock.js"
import { AppConfig } from "../../src/config.js"
import { ConsoleAccounts, type ConsoleSession } from "../../src/console/console-accounts.js"
import { ConsoleRefusal } from "../../src/console/console-refusal.js"
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
import { type Html, pageHeaders, raw } from "../html.js"
import { addressBookPage, auditPage, invitePage, policyPage, usersPage } from "./policy-pages.js"

const COOKIE = "facet_console"
const SECURE_HEADERS = pageHeaders(CONSOLE_CSP)

/** A page as the response, with the console's headers. */
const htmlResponse = (page: Html, status = 200) =>
  HttpServerResponse.text(page.text, { status, contentType: "text/html; charset=utf-8", headers: SECURE_HEADERS })
const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store" } })

/** The submitted form's fields (application/x-www-form-urlencoded). */
const formFields = Effect.gen(function* () {
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
  Effect.gen(function* () {
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
    const withdrawalService = yield* Withdrawals
    const addressBook = yield* AddressBook
    const policy = yield* WithdrawalPolicy
    const users = yield* ConsoleUsers
    const audit = yield* AuditLog
    const clock = yield* PolicyClock
    const secure = (yield* AppConfig).baseUrl.startsWith("https:")

    /** Who acts, for the audit log: the session's user, from this request's address and browser. */
    const actorOf = (session: ConsoleSession) =>
      Effect.map(
        HttpServerRequest.HttpServerRequest,
        (request): AuditActor => ({
          kind: "console_user",
          name: session.loginName,
          from: Option.getOrElse(request.remoteAddress, () => "unknown"),
          userAgent: request.headers["user-agent"] ?? ""
        })
      )

    /** The password (and TOTP code) asked again on this form, counted against this request's address. */
    const reconfirm = (session: ConsoleSession, field: (name: string) => string, done?: string) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        accounts.confirmPassword(
          session.userId,
          field("password"),
          field("code"),
          Option.getOrElse(request.remoteAddress, () => "unknown"),
          done
        )
      )

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

    /** A form only some roles may send: others get 403 and nothing changes. */
    const allowed = <E, R>(
      session: ConsoleSession,
      capability: Capability,
      use: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
    ) =>
      can(session.role, capability)
        ? use
        : Effect.succeed(
            htmlResponse(
              messagePage("Not allowed", `A ${session.role} cannot do this: nothing was changed.`, session),
              403
            )
          )

    const withdrawalsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.gen(function* () {
        const list = yield* withdrawals.list(session.merchantId, { limit: 100, offset: 0 })
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
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const consoleToken = new URL(request.url, "http://console").searchParams.get("token") ?? ""
        return yield* accounts.setupOffer(consoleToken).pipe(
          Effect.map((offer) => htmlResponse(setupPage(offer, consoleToken))),
          Effect.catchTag("ConsoleRefusal", (refusal) =>
            Effect.succeed(htmlResponse(messagePage("Setup link not usable", refusal.message), refusal.status))
          )
        )
      })
    )
    yield* router.post(
      "/console/setup",
      Effect.gen(function* () {
        const field = yield* formFields
        return yield* accounts.setup(field("token"), field("login_name"), field("password")).pipe(
          Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, 12 * 3600)),
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
        const address = Option.getOrElse(request.remoteAddress, () => "unknown")
        return yield* accounts
          .login(field("login_name"), field("password"), address, field("code"), request.headers["user-agent"] ?? "")
          .pipe(
            Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, 12 * 3600)),
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

    yield* router.get(
      "/console/balances",
      signedIn((session) =>
        Effect.map(portfolio.portfolio(session.merchantId), (p) => htmlResponse(balancesPage(session, p)))
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

    yield* router.get(
      "/console/orders",
      signedIn((session) =>
        Effect.map(orders.list(session.merchantId, { page: 1, size: 100 }), (list) =>
          htmlResponse(ordersPage(session, list.items, list.total))
        )
      )
    )
    yield* router.get(
      "/console/transactions",
      signedIn((session) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const q = new URL(request.url, "http://console").searchParams.get("q") ?? ""
          const found = yield* transactions.search(session.merchantId, { q, limit: 100, offset: 0 })
          return htmlResponse(transactionsPage(session, q, found.items, found.total))
        })
      )
    )

    const assetsView = (session: ConsoleSession, message?: string, status = 200) =>
      Effect.map(catalog.policies(session.merchantId), (policies) =>
        htmlResponse(assetsPage(session, policies, message), status)
      )
    yield* router.get(
      "/console/assets",
      signedIn((session) => assetsView(session))
    )
    yield* router.post(
      "/console/assets/enable",
      signedForm((session, field) => {
        const [chain, currency] = field("asset_key").split("-")
        return allowed(
          session,
          "manage",
          Schema.decodeUnknown(Chain)(chain).pipe(
            Effect.flatMap((c) =>
              catalog.enroll(session.merchantId, { chain: c, currency: currency ?? "", source: "console" })
            ),
            Effect.flatMap((enabled) => assetsView(session, `${enabled.asset_key} is enabled.`)),
            Effect.catchAll(() => assetsView(session, `${field("asset_key")} cannot be enabled.`, 400))
          )
        )
      })
    )

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
    yield* router.post(
      "/console/keys",
      signedIn((session) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const params = yield* request.urlParamsBody.pipe(Effect.orElseSucceed(() => UrlParams.empty))
          const field = (name: string) => Option.getOrElse(UrlParams.getFirst(params, name), () => "")
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

    yield* router.get(
      "/console/deposit-addresses",
      signedIn((session) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const user = (new URL(request.url, "http://console").searchParams.get("user") ?? "").trim()
          const found = yield* depositAddresses.list(session.merchantId, {
            external_user_id: user === "" ? undefined : user,
            limit: 100,
            offset: 0
          })
          return htmlResponse(depositAddressesPage(session, user, found.items, found.total))
        })
      )
    )

    const collectView = (session: ConsoleSession, assetKey: string, message?: string, status = 200) =>
      Effect.gen(function* () {
        const policies = yield* catalog.policies(session.merchantId)
        const chosen =
          policies.find((p) => p.asset_key === assetKey && p.actions.collect) ?? policies.find((p) => p.actions.collect)
        const wallets =
          chosen === undefined
            ? []
            : (yield* portfolio.detail(session.merchantId, chosen.asset_key, { limit: 100 }).pipe(Effect.orDie)).items
        return htmlResponse(collectPage(session, policies, chosen?.asset_key ?? "", wallets, message), status)
      })
    yield* router.get(
      "/console/collect",
      signedIn((session) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          collectView(session, new URL(request.url, "http://console").searchParams.get("asset") ?? "")
        )
      )
    )
    yield* router.post(
      "/console/collect",
      signedForm((session, field) =>
        allowed(
          session,
          "manage",
          collections.request(session.merchantId, field("asset"), { from_wallet_id: field("wallet_id") }).pipe(
            Effect.tap((op) =>
              Effect.logInfo(`console: ${session.loginName} swept ${op.from_address} (${op.operation_id})`)
            ),
            Effect.flatMap((op) =>
              collectView(
                session,
                field("asset"),
                `Sweep ${op.operation_id} started: ${op.amount} ${op.currency} (${op.status}).`
              )
            ),
            Effect.catchTags({
              BadRequest: (e) => collectView(session, field("asset"), e.error, 400),
              NotFound: (e) => collectView(session, field("asset"), e.error, 404),
              Conflict: (e) => collectView(session, field("asset"), e.error, 409),
              ServiceUnavailable: (e) => collectView(session, field("asset"), e.error, 503)
            })
          )
        )
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

    // the address book: a human adds and removes, with the password (and TOTP) asked again
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
            Effect.catchTags({
              ConsoleRefusal: (refusal) => addressBookView(session, refusal.message, refusal.status),
              NotFound: (e) => addressBookView(session, e.error, 404)
            })
          )
        )
      )
    )

    // the policy: tightening at once, loosening after the cooling-off (pending, cancellable)
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
              ...["address_book", "cooling_off", "quorum"].map((setting) => ({
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
          }).pipe(Effect.catchTag("NotFound", (e) => policyView(session, e.error, 404)))
        )
      )
    )

    // people: the owner invites with a one-time link and removes
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
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = new URL(request.url, "http://console").searchParams.get("token") ?? ""
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
          .accept(
            field("token"),
            field("password"),
            Option.getOrElse(request.remoteAddress, () => "unknown"),
            request.headers["user-agent"] ?? ""
          )
          .pipe(
            Effect.map((cookie) => withCookie(seeOther("/console/withdrawals"), cookie, 12 * 3600)),
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

    // the audit log, filtered, and exported as CSV
    const auditFilter = Effect.map(HttpServerRequest.HttpServerRequest, (request): AuditFilter => {
      const params = new URL(request.url, "http://console").searchParams
      const day = (name: string, plusDays: number) => {
        const text = params.get(name) ?? ""
        const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? new Date(`${text}T00:00:00Z`) : undefined
        return date === undefined || Number.isNaN(date.getTime())
          ? undefined
          : new Date(date.getTime() + plusDays * 86_400_000)
      }
      return {
        action: params.get("action") ?? undefined,
        actor: params.get("actor") ?? undefined,
        since: day("since", 0),
        until: day("until", 1),
        before: params.get("before") ?? undefined,
        limit: 100
      }
    })
    yield* router.get(
      "/console/audit",
      signedIn((session) =>
        allowed(
          session,
          "audit",
          Effect.gen(function* () {
            const filter = yield* auditFilter
            return htmlResponse(auditPage(session, filter, yield* audit.list(session.merchantId, filter)))
          })
        )
      )
    )
    yield* router.get(
      "/console/audit.csv",
      signedIn((session) =>
        allowed(
          session,
          "audit",
          Effect.gen(function* () {
            const filter = { ...(yield* auditFilter), before: undefined, limit: 100_000 }
            const rows = yield* audit.list(session.merchantId, filter)
            return HttpServerResponse.text(audit.csv(rows), {
              contentType: "text/csv; charset=utf-8",
              headers: {
                ...SECURE_HEADERS,
                "content-disposition": `attachment; filename="audit-${session.merchantId}.csv"`
              }
            })
          })
        )
      )
    )
  })
)
