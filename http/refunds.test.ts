import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { launchBrowser } from "../test/browser.js"
import { approveInConsole, setUpOwner, submitInConsole } from "../test/console-http.js"
import { clientOf, ledgerBalances, pay, sweep, untilFinished, untilWithdrawal } from "../test/custody-flows.js"
import { TestAppLive, TestClient, type TestResponse } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { ledgerIntegrity } from "../test/ledger-integrity.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually, startReceiver } from "../test/webhook-receiver.js"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { tronAddress } from "../src/keys/address-encoding.js"
import { WithdrawalDecisions } from "../custody/withdrawal-decisions.js"
import { WithdrawalPolicy } from "../custody/withdrawal-policy.js"
import { verifyWebhook } from "../src/webhooks/receiver.js"
import { webhookProblem } from "../test/webhook-bodies.js"

// unclaimed refunds whose link's time is up expire within a fraction of a second here (30 s in production)
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_REFUND_EXPIRY_INTERVAL_MS: "300" } })

const PASSWORD = "Correct-Horse-Battery-9"
const TEST_ACTOR = { kind: "operator", name: "test" } as const

/** A fresh TRON address outside the service: valid, nobody's here. */
const stranger = () => tronAddress(randomBytes(20))

/** The claim form as a browser sends it. */
const claimForm = (url: string, fields: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    })
    return { status: response.status, location: response.headers.get("location"), text: await response.text() }
  })

const page = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    return { status: response.status, text: await response.text() }
  })

const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** The notice a claim or console page answered with. */
const noticeOf = (text: string) =>
  (/class="notice" role="alert">([^<]*)</.exec(text)?.[1] ?? "").replace(/&#39;/g, "'").replace(/&quot;/g, '"')

describe("refunds on the devnets", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    it.scoped(
      "a paid order refunded in part through its claim link, approved in the console, sent on chain; every refusal locks nothing",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const policy = yield* WithdrawalPolicy
          const local = (url: string) => `${client.url}${new URL(url).pathname}`
          const api = (method: string, route: string, apiKey: string, json?: unknown, headers = {}) =>
            client.request(method, route, { apiKey, ...(json === undefined ? {} : { json }), headers })
          const expectStatus = (res: TestResponse, status: number) =>
            expect(res.status, `${res.status} ${res.text.slice(0, 300)}`).toBe(status)

          // the merchant: its webhooks to one receiver, the order's (notify_url) to another, which wins
          const merchantHook = yield* startReceiver()
          const orderHook = yield* startReceiver()
          const applied = asRecord(
            (yield* client.request("POST", "/v1/ai/merchant-apply", {
              json: {
                project_name: "Atelier Nord",
                business_type: "shop",
                use_case: "refunds",
                agree_terms: true,
                contact_email: "owner@refunds.example",
                webhook_url: merchantHook.url
              }
            })).body
          )
          const apiKey = String(asRecord(applied.env).FACET_API_KEY)
          const merchantId = String(asRecord(applied.env).FACET_MERCHANT_ID)
          const service = { pid: process.pid, url: client.url, logFile: "", log: () => "" }
          const owner = yield* setUpOwner(
            service,
            String(asRecord(applied.merchant_console).console_token),
            "owner",
            PASSWORD
          )

          // an order of 100 USDT, paid on the TRON devnet
          const created = yield* api("POST", "/v1/orders", apiKey, {
            amount: "100",
            currency: "USDT",
            chain: "TRC20",
            notify_url: orderHook.url
          })
          expectStatus(created, 201)
          const order = asRecord(created.body)
          const orderId = String(order.order_id)
          yield* pay("TRC20-USDT", String(order.pay_address), "100")
          const paid = yield* eventually(
            api("GET", `/v1/orders/${orderId}`, apiKey),
            (r) => asRecord(r.body).status === "PAID",
            30_000
          )
          expect(asRecord(paid.body)).toMatchObject({ status: "PAID", paid_amount: "100.000000", refunded_amount: "0" })

          // still in the order's receive address: refunds leave from the main wallet, so collect first
          const uncollected = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "10" })
          expectStatus(uncollected, 400)
          expect(String(asRecord(uncollected.body).error)).toMatch(/collect the order's payment first/)
          const swept = yield* sweep(apiKey, "TRC20-USDT", {
            from_wallet_id: String(asRecord(list(order.available_assets)[0]).wallet_id)
          })
          expectStatus(swept, 200)
          const collected = yield* untilFinished(apiKey, "TRC20-USDT", String(asRecord(swept.body).operation_id))
          expect(collected.status).toBe("COMPLETED")
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "100", locked: "0" })

          // refused, nothing locked: more than was paid, beyond the asset's precision, an asset it was not paid in,
          // another merchant's order, a key without the withdrawals scope
          const refusals = [
            { body: { amount: "100.000001" }, status: 400, error: /more than the 100 USDT paid to order/ },
            { body: { amount: "1.1234567" }, status: 400, error: /more than 6 fractional digits/ },
            { body: { chain: "BEP20", currency: "USDT", amount: "1" }, status: 400, error: /no confirmed payment in/ },
            { body: { chain: "TRC20" }, status: 400, error: /chain and currency name the asset refunded together/ },
            { body: { amount: "5", rate: "0" }, status: 400, error: /rate must be greater than zero/ }
          ]
          for (const refusal of refusals) {
            const res = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, refusal.body)
            expectStatus(res, refusal.status)
            expect(String(asRecord(res.body).error)).toMatch(refusal.error)
          }
          const other = yield* onboardMerchant()
          const foreign = yield* api("POST", `/v1/orders/${orderId}/refunds`, other.apiKey, { amount: "1" })
          expectStatus(foreign, 404)
          expectStatus(yield* api("GET", `/v1/orders/${orderId}/refunds`, other.apiKey), 404)
          const readOnly = Redacted.value(
            (yield* (yield* ApiKeys).issue(merchantId, ["read"], "read only", TEST_ACTOR)).key
          )
          expectStatus(yield* api("POST", `/v1/orders/${orderId}/refunds`, readOnly, { amount: "1" }), 403)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "100", locked: "0" })
          const [none] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM refunds WHERE order_id = ${orderId}`
          expect(none?.n).toBe(0)

          // two refunds of 60 at once: the order's lock lets one through, the other finds 40 left
          const racing = yield* Effect.all(
            [1, 2].map(() => api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "60" })),
            { concurrency: "unbounded" }
          )
          expect(racing.map((r) => r.status).sort()).toEqual([201, 400])
          const raced = asRecord(racing.find((r) => r.status === 201)?.body)
          expect(String(asRecord(racing.find((r) => r.status === 400)?.body).error)).toMatch(
            /more than the 40 USDT paid to order .* and not yet refunded \(paid 100, refunded or being refunded 60\)/
          )
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "40", locked: "60" })
          expectStatus(yield* api("POST", `/v1/refunds/${String(raced.refund_id)}/cancel`, readOnly), 403)
          const cancelledRace = yield* api("POST", `/v1/refunds/${String(raced.refund_id)}/cancel`, apiKey)
          expectStatus(cancelledRace, 200)
          expect(asRecord(cancelledRace.body).status).toBe("CANCELLED")
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "100", locked: "0" })

          // A: a partial refund of 30 (idempotent); the replay shows a new link, the first stops working
          const aBody = { amount: "30", reason: "one item out of stock" }
          const aRes = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, aBody, {
            "x-service-idempotency-key": "refund-a"
          })
          expectStatus(aRes, 201)
          const a = asRecord(aRes.body)
          expect(a).toMatchObject({
            order_id: orderId,
            status: "PENDING_CLAIM",
            chain: "TRC20",
            currency: "USDT",
            amount: "30.000000",
            reason: "one item out of stock",
            withdrawal_id: null,
            to_address: null
          })
          expect(String(a.claim_url)).toMatch(/^http:\/\/facet\.test\/refund-claims\/frc_[\w-]{43}$/)
          const replay = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, aBody, {
            "x-service-idempotency-key": "refund-a"
          })
          expectStatus(replay, 201)
          expect(asRecord(replay.body).refund_id).toBe(a.refund_id)
          expect(asRecord(replay.body).claim_url).not.toBe(a.claim_url)
          expectStatus(
            yield* api(
              "POST",
              `/v1/orders/${orderId}/refunds`,
              apiKey,
              { amount: "31" },
              { "x-service-idempotency-key": "refund-a" }
            ),
            409
          )
          expect((yield* page(local(String(a.claim_url)))).status).toBe(404)
          const aLink = local(String(asRecord(replay.body).claim_url))
          expect((yield* api("GET", `/v1/refunds/${String(a.refund_id)}`, apiKey)).body).not.toHaveProperty("claim_url")

          // B at a stated rate: 20 in the order's currency × 0.5; C and D plain
          const bRes = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "20", rate: "0.5" })
          expectStatus(bRes, 201)
          const b = asRecord(bRes.body)
          expect(b).toMatchObject({ amount: "10.000000", order_amount: "20", rate: "0.5" })
          const c = asRecord((yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "5" })).body)
          const d = asRecord((yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "15" })).body)
          // 30 + 10 + 5 + 15 are held: 40 left, so 41 is refused and nothing more is locked
          const beyond = yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "40.000001" })
          expectStatus(beyond, 400)
          expect(String(asRecord(beyond.body).error)).toMatch(/more than the 40 USDT/)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "40", locked: "60" })
          expect(asRecord((yield* api("GET", `/v1/orders/${orderId}`, apiKey)).body).refunded_amount).toBe("60.000000")

          // the claim page: what, whose, where, the warning; a bad address, a missing confirmation, one of the
          // service's own addresses: 400 with the form again, nothing changed
          const claimPage = yield* page(aLink)
          expect(claimPage.status).toBe(200)
          expect(claimPage.text).toContain('<p class="merchant">Atelier Nord</p>')
          expect(claimPage.text).toContain('<span id="amount">30</span> USDT')
          expect(claimPage.text).toContain("TRON (TRC20)")
          expect(claimPage.text).toContain("memo, tag or payment ID")
          expect(claimPage.text).toContain('<strong id="net">29.97 USDT</strong>')
          const badAddress = yield* claimForm(aLink, {
            address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzz",
            own_address: "yes"
          })
          expect(badAddress.status).toBe(400)
          expect(noticeOf(badAddress.text)).toMatch(/is not a TRON address .*Nothing was sent/)
          expect(
            (yield* claimForm(aLink, { address: "0x8ba1f109551bD432803012645Ac136ddd64DBA72", own_address: "yes" }))
              .status
          ).toBe(400)
          const ours = yield* claimForm(aLink, { address: String(order.pay_address), own_address: "yes" })
          expect(ours.status).toBe(400)
          expect(noticeOf(ours.text)).toMatch(/one of this service's own receive addresses/)
          const unconfirmed = yield* claimForm(aLink, { address: stranger() })
          expect(unconfirmed.status).toBe(400)
          expect(asRecord((yield* api("GET", `/v1/refunds/${String(a.refund_id)}`, apiKey)).body).status).toBe(
            "PENDING_CLAIM"
          )
          const [noWithdrawal] = yield* sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM withdrawals WHERE merchant_id = ${merchantId}`
          expect(noWithdrawal?.n).toBe(0)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "40", locked: "60" })

          // the address book binds the merchant's own withdrawals, not refunds (refund_address_book is off)
          yield* policy.change(merchantId, [{ setting: "address_book", value: "on" }], TEST_ACTOR)
          // an operator's auto-approval limit that would let any 30 USDT withdrawal through: never a refund's
          yield* (yield* WithdrawalDecisions).setAutoApproval(merchantId, "TRC20", "USDT", Option.some("1000"), {
            kind: "operator",
            by: "ops@test",
            from: "test"
          })
          // the customer claims A: a withdrawal of kind refund holds the refund's lock (none taken twice)
          const customerA = stranger()
          const claimed = yield* claimForm(aLink, { address: customerA, own_address: "yes" })
          expect(claimed.status, claimed.text.slice(0, 300)).toBe(303)
          expect(claimed.location).toContain("/refund-claims/")
          const afterClaim = yield* page(aLink)
          expect(afterClaim.text).toContain('data-status="CLAIMED"')
          expect(afterClaim.text).toContain(customerA)
          const aClaimed = asRecord((yield* api("GET", `/v1/refunds/${String(a.refund_id)}`, apiKey)).body)
          expect(aClaimed).toMatchObject({ status: "CLAIMED", to_address: customerA, net_amount: "29.970000" })
          const aWithdrawal = String(aClaimed.withdrawal_id)
          expect(asRecord((yield* api("GET", `/v1/withdrawals/${aWithdrawal}`, apiKey)).body)).toMatchObject({
            status: "PENDING",
            kind: "refund",
            refund_id: a.refund_id,
            order_id: orderId,
            amount: "30.000000",
            to_address: customerA
          })
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "40", locked: "60" })
          // a second claim of the link: 409, a page saying so, nothing more
          const again = yield* claimForm(aLink, { address: stranger(), own_address: "yes" })
          expect(again.status).toBe(409)
          expect(noticeOf(again.text)).toMatch(/already claimed/)

          // the owner sees it marked as a refund among the withdrawals, and approves it with the password
          const withdrawalsPage = yield* Effect.promise(() =>
            fetch(`${client.url}/console/withdrawals`, { headers: { cookie: owner.cookie } }).then((r) => r.text())
          )
          expect(withdrawalsPage).toMatch(
            new RegExp(
              `class="refund-of">Refund <a [^>]*>${String(a.refund_id)}</a> of order <strong>${orderId}</strong>`
            )
          )
          const approval = yield* approveInConsole(service, owner, aWithdrawal)
          expect(approval.status, approval.notice).toBe(200)
          const sent = yield* untilWithdrawal(apiKey, aWithdrawal, ["COMPLETED", "FAILED"])
          expect(sent.status, JSON.stringify(sent)).toBe("COMPLETED")
          const aDone = asRecord((yield* api("GET", `/v1/refunds/${String(a.refund_id)}`, apiKey)).body)
          expect(aDone).toMatchObject({ status: "COMPLETED", tx_hash: sent.tx_hash })
          expect(yield* (yield* clientOf("TRC20")).balance(customerA, "USDT")).toBe(29_970_000n)
          expect((yield* page(aLink)).text).toContain(String(sent.tx_hash))

          // B cancelled by the merchant: its link then refuses (409), the amount is back
          const bLink = local(String(b.claim_url))
          expectStatus(yield* api("POST", `/v1/refunds/${String(b.refund_id)}/cancel`, apiKey), 200)
          const lateClaim = yield* claimForm(bLink, { address: stranger(), own_address: "yes" })
          expect(lateClaim.status).toBe(409)
          expect(noticeOf(lateClaim.text)).toMatch(/can no longer be used/)
          expectStatus(yield* api("POST", `/v1/refunds/${String(b.refund_id)}/cancel`, apiKey), 409)
          expectStatus(yield* api("POST", `/v1/refunds/${String(a.refund_id)}/cancel`, apiKey), 409)

          // C's link runs out unused: the expiry job unlocks it
          yield* sql`UPDATE refunds SET claim_expires_at = clock_timestamp() - interval '1 second' WHERE id = ${String(c.refund_id)}`
          const cExpired = yield* eventually(
            api("GET", `/v1/refunds/${String(c.refund_id)}`, apiKey),
            (r) => asRecord(r.body).status === "EXPIRED",
            10_000
          )
          expect(asRecord(cExpired.body).status).toBe("EXPIRED")

          // D claimed, then its withdrawal rejected in the console: D FAILED, the money back in available
          const dClaim = yield* claimForm(local(String(d.claim_url)), { address: stranger(), own_address: "yes" })
          expect(dClaim.status).toBe(303)
          const dWithdrawal = String(
            asRecord((yield* api("GET", `/v1/refunds/${String(d.refund_id)}`, apiKey)).body).withdrawal_id
          )
          const rejected = yield* submitInConsole(service, owner, `/console/withdrawals/${dWithdrawal}/reject`, {
            reason: "the customer asked for store credit"
          })
          expect(rejected.status, rejected.notice).toBe(200)
          const dFailed = asRecord((yield* api("GET", `/v1/refunds/${String(d.refund_id)}`, apiKey)).body)
          expect(dFailed).toMatchObject({ status: "FAILED" })
          expect(String(dFailed.failure_reason)).toMatch(/was rejected by owner: the customer asked for store credit/)

          // what is left: A's 30 sent (its fee to the platform), the rest available again, nothing locked
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "70", locked: "0" })
          const orderNow = asRecord((yield* api("GET", `/v1/orders/${orderId}`, apiKey)).body)
          expect(orderNow).toMatchObject({ paid_amount: "100.000000", refunded_amount: "30.000000" })
          const listed = asRecord((yield* api("GET", `/v1/orders/${orderId}/refunds`, apiKey)).body)
          expect(listed.total).toBe(5)
          const completed = asRecord((yield* api("GET", "/v1/refunds?status=COMPLETED", apiKey)).body)
          expect(list(completed.items).map((r) => asRecord(r).refund_id)).toEqual([a.refund_id])
          // 70 left to refund again: what failed, expired or was cancelled holds nothing
          const rest = yield* api(
            "POST",
            `/v1/orders/${orderId}/refunds`,
            apiKey,
            {},
            { "x-service-idempotency-key": "rest" }
          )
          expectStatus(rest, 201)
          expect(asRecord(rest.body).amount).toBe("70.000000")
          // its retry replays it (nothing is left to refund, and that refund is why)
          const restAgain = yield* api(
            "POST",
            `/v1/orders/${orderId}/refunds`,
            apiKey,
            {},
            { "x-service-idempotency-key": "rest" }
          )
          expectStatus(restAgain, 201)
          expect(asRecord(restAgain.body).refund_id).toBe(asRecord(rest.body).refund_id)
          expectStatus(yield* api("POST", `/v1/refunds/${String(asRecord(rest.body).refund_id)}/cancel`, apiKey), 200)

          // with refund_address_book on, a refund goes only to a usable address-book entry: 403, nothing changed
          yield* policy.change(merchantId, [{ setting: "refund_address_book", value: "on" }], TEST_ACTOR)
          const e = asRecord((yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "1" })).body)
          const bookRefused = yield* claimForm(local(String(e.claim_url)), { address: stranger(), own_address: "yes" })
          expect(bookRefused.status).toBe(403)
          expect(noticeOf(bookRefused.text)).toMatch(/payout rules .*not in this merchant's withdrawal address book/)
          expect(asRecord((yield* api("GET", `/v1/refunds/${String(e.refund_id)}`, apiKey)).body).status).toBe(
            "PENDING_CLAIM"
          )
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "69", locked: "1" })
          expectStatus(yield* api("POST", `/v1/refunds/${String(e.refund_id)}/cancel`, apiKey), 200)
          expectStatus(yield* api("GET", `/v1/refunds/${String(e.refund_id)}`, other.apiKey), 404)
          expectStatus(yield* api("POST", `/v1/refunds/${String(e.refund_id)}/claim-link`, other.apiKey), 404)

          // from the console: a refund made by the owner (its link shown once), then cancelled there
          const made = yield* submitInConsole(service, owner, "/console/refunds", {
            order_id: orderId,
            asset: "TRC20-USDT",
            amount: "2",
            reason: "made in the console"
          })
          expect(made.status, made.notice).toBe(201)
          expect(made.text).toMatch(/<code id="claim-link">http:\/\/facet\.test\/refund-claims\/frc_[\w-]{43}<\/code>/)
          const madeId = /Refund (rfd_\w+) created/.exec(made.notice)?.[1] ?? ""
          const byConsole = asRecord((yield* api("GET", `/v1/refunds/${madeId}`, apiKey)).body)
          expect(byConsole).toMatchObject({
            status: "PENDING_CLAIM",
            amount: "2.000000",
            reason: "made in the console"
          })
          const tooMuch = yield* submitInConsole(service, owner, "/console/refunds", {
            order_id: orderId,
            amount: "69"
          })
          expect(tooMuch.status).toBe(400)
          expect(tooMuch.notice).toMatch(/more than the 68 USDT/)
          const cancelledThere = yield* submitInConsole(service, owner, `/console/refunds/${madeId}/cancel`, {})
          expect(cancelledThere.status, cancelledThere.notice).toBe(200)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toMatchObject({ available: "70", locked: "0" })

          // refund.updated, one per status, keyed refund.updated:{refund_id}:{STATUS}, to the order's notify_url
          const expected = [
            ...["PENDING_CLAIM", "CANCELLED"].map((s) => `refund.updated:${String(raced.refund_id)}:${s}`),
            ...["PENDING_CLAIM", "CLAIMED", "COMPLETED"].map((s) => `refund.updated:${String(a.refund_id)}:${s}`),
            ...["PENDING_CLAIM", "CANCELLED"].map((s) => `refund.updated:${String(b.refund_id)}:${s}`),
            ...["PENDING_CLAIM", "EXPIRED"].map((s) => `refund.updated:${String(c.refund_id)}:${s}`),
            ...["PENDING_CLAIM", "CLAIMED", "FAILED"].map((s) => `refund.updated:${String(d.refund_id)}:${s}`)
          ]
          const refundEvents = () => orderHook.received.filter((r) => r.headers["x-facet-event"] === "refund.updated")
          yield* eventually(
            Effect.sync(refundEvents),
            (events) => expected.every((k) => events.some((e) => e.headers["x-facet-idempotency-key"] === k)),
            15_000
          )
          const byKey = new Map(
            refundEvents().map((e) => [
              String(e.headers["x-facet-idempotency-key"]),
              asRecord(JSON.parse(e.rawBody.toString()))
            ])
          )
          for (const key of expected) expect(byKey.has(key), key).toBe(true)
          for (const delivered of refundEvents()) {
            const key = String(delivered.headers["x-facet-idempotency-key"])
            expect(webhookProblem("refund.updated", key, delivered.rawBody.toString("utf8")), key).toBeUndefined()
          }
          expect(byKey.get(`refund.updated:${String(a.refund_id)}:COMPLETED`)).toMatchObject({
            event: "refund.updated",
            refund: { refund_id: a.refund_id, status: "COMPLETED", tx_hash: sent.tx_hash, to_address: customerA }
          })
          expect(JSON.stringify([...byKey.values()])).not.toContain("claim_url")
          // signed with the merchant's secret, typed by the receiver helper
          const completedEvent = refundEvents().find(
            (e) => e.headers["x-facet-idempotency-key"] === `refund.updated:${String(a.refund_id)}:COMPLETED`
          )
          const verified = verifyWebhook({
            rawBody: completedEvent?.rawBody ?? "",
            headers: completedEvent?.headers ?? {},
            secret: String(asRecord(applied.env).FACET_WEBHOOK_SECRET)
          })
          expect(Either.getOrThrow(verified)).toMatchObject({
            type: "refund.updated",
            body: { refund: { status: "COMPLETED" } }
          })
          expect(merchantHook.received.some((r) => r.headers["x-facet-event"] === "refund.updated")).toBe(false)

          // the audit log: created, claimed, cancelled, expired
          const acts = yield* sql<{ action: string; n: number }>`
            SELECT action, count(*)::int AS n FROM audit_log WHERE merchant_id = ${merchantId} AND action LIKE 'refund.%' GROUP BY action ORDER BY action`
          expect(acts).toEqual([
            { action: "refund.cancelled", n: 5 },
            { action: "refund.claimed", n: 2 },
            { action: "refund.created", n: 8 },
            { action: "refund.expired", n: 1 },
            { action: "refund.link_reissued", n: 2 }
          ])
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
          // locked is exactly what open withdrawals and unclaimed refunds hold (zero here)
          const [locks] = yield* sql<{ locked: string; open: string }>`
            SELECT trim_scale(b.locked)::text AS locked,
              trim_scale(coalesce((SELECT sum(amount) FROM withdrawals w WHERE w.merchant_id = b.merchant_id AND w.status IN ('PENDING', 'APPROVED', 'BROADCAST')), 0)
                + coalesce((SELECT sum(amount) FROM refunds r WHERE r.merchant_id = b.merchant_id AND r.status = 'PENDING_CLAIM'), 0))::text AS open
            FROM merchant_balances b WHERE b.merchant_id = ${merchantId} AND b.chain = 'TRC20' AND b.currency = 'USDT'`
          expect(locks).toEqual({ locked: "0", open: "0" })

          // screenshots for the guide (FACET_SCREENSHOTS_DIR=docs/guides/screenshots): the claim page, the console's refunds
          const dir = process.env.FACET_SCREENSHOTS_DIR
          if (dir !== undefined) {
            const shown = asRecord(
              (yield* api("POST", `/v1/orders/${orderId}/refunds`, apiKey, { amount: "12.5", reason: "late delivery" }))
                .body
            )
            const browser = yield* launchBrowser
            const context = yield* Effect.promise(() => browser.newContext({ viewport: { width: 480, height: 900 } }))
            const tab = yield* Effect.promise(() => context.newPage())
            yield* Effect.promise(() => tab.goto(local(String(shown.claim_url))))
            yield* Effect.promise(() => tab.fill("input[name=address]", stranger()))
            yield* Effect.promise(() => tab.screenshot({ path: path.join(dir, "refund-claim.png"), fullPage: true }))
            const consoleContext = yield* Effect.promise(() =>
              browser.newContext({ viewport: { width: 1200, height: 900 } })
            )
            const [name, value] = owner.cookie.split("=")
            yield* Effect.promise(() =>
              consoleContext.addCookies([{ name: name ?? "", value: value ?? "", url: `${client.url}/console` }])
            )
            const consoleTab = yield* Effect.promise(() => consoleContext.newPage())
            yield* Effect.promise(() => consoleTab.goto(`${client.url}/console/refunds`))
            yield* Effect.promise(() =>
              consoleTab.screenshot({ path: path.join(dir, "console-refunds.png"), fullPage: true })
            )
          }
        }),
      { timeout: 240_000 }
    )
  })
})
