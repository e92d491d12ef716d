import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import * as http from "node:http"
import * as path from "node:path"
import type { Page } from "playwright-core"
import type { ConsoleSession } from "../src/console/console-accounts.js"
import type { PaymentLink } from "../src/domain/payment-link.js"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { launchBrowser } from "../test/browser.js"
import { pay } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { paymentLinkPage, paymentLinksPage } from "./console/payment-link-pages.js"
import { renderPayPage } from "./pay-page.js"

const PASSWORD = "Correct-Horse-Battery-9"
/** Submissions one link's page takes per minute in this file, and from one client address (the 429 scenario runs into both). */
const VISITS_PER_MINUTE = 12
const VISITS_PER_CLIENT = 8

/** With FACET_SCREENSHOTS_DIR set (e.g. `docs/guides/screenshots`), the pages are saved there for the guide. */
const screenshot = (page: Page, name: string) => {
  const dir = process.env.FACET_SCREENSHOTS_DIR
  return dir === undefined
    ? Effect.void
    : Effect.promise(() => page.screenshot({ path: path.join(dir, name), fullPage: true }))
}

const run = <A>(f: () => Promise<A>) => Effect.promise(f)

const items = (body: unknown) => {
  const list = asRecord(body).items
  return Array.isArray(list) ? list.map(asRecord) : []
}

/** A customer submitting the link's public form. */
const visit = (linkId: string, fields: Record<string, string> = {}) =>
  Effect.flatMap(TestClient, (client) =>
    client.request("POST", `/pay/${linkId}`, {
      rawBody: new URLSearchParams(fields).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
  )

/** A visit from another client address on this machine (a loopback address of its own: 127.0.0.n). */
const visitFrom = (from: string, linkId: string, fields: Record<string, string>) =>
  Effect.flatMap(TestClient, (client) =>
    Effect.async<{ readonly status: number; readonly retryAfter: string | undefined }>((resume) => {
      const body = new URLSearchParams(fields).toString()
      const request = http.request(
        `${client.url}/pay/${linkId}`,
        {
          method: "POST",
          localAddress: from,
          headers: { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) }
        },
        (response) => {
          response.resume()
          response.on("end", () => {
            const retryAfter = response.headers["retry-after"]
            resume(Effect.succeed({ status: response.statusCode ?? 0, retryAfter }))
          })
        }
      )
      request.on("error", (error) => resume(Effect.die(error)))
      request.end(body)
    })
  )

/** The order a visit was sent on to (its 303's location). */
const orderOf = (response: { readonly status: number; readonly headers: Headers; readonly text: string }) => {
  expect(response.status, response.text.slice(0, 300)).toBe(303)
  const location = response.headers.get("location") ?? ""
  expect(location).toMatch(/^\/checkout\/ord_\w+$/)
  return location.slice("/checkout/".length)
}

/** How many orders a link created, straight from the database. */
const ordersOfLink = (linkId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM orders WHERE payment_link_id = ${linkId}`.pipe(
      Effect.map((rows) => rows[0]?.n ?? -1),
      Effect.orDie
    )
  )

const createLink = (apiKey: string, json: Record<string, unknown>, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const res = yield* client.request("POST", "/v1/payment-links", { apiKey, json, headers })
    expect(res.status, res.text).toBe(201)
    return asRecord(res.body)
  })

describe("payment links", () => {
  layer(
    TestAppLive(
      { paymentLinkVisitsPerMinute: VISITS_PER_MINUTE, paymentLinkVisitsPerClientPerMinute: VISITS_PER_CLIENT },
      { chains: "devnet" }
    ),
    {
      excludeTestServices: true,
      timeout: "180 seconds"
    }
  )((it) => {
    it.scoped(
      "a fixed-price link: each visit is an order of its own carrying the link; one paid on the devnet shows in the link's uses and totals",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const json = {
            product_name: "Blue mug",
            product_desc: "Stoneware, 350 ml",
            amount: "12.50",
            currency: "USDT",
            chain: "TRC20",
            metadata: { sku: "mug-1" },
            return_url: "https://shop.example/thanks"
          }
          const link = yield* createLink(apiKey, json, { "x-service-idempotency-key": "link-1" })
          const id = String(link.payment_link_id)
          expect(link).toMatchObject({
            status: "active",
            active: true,
            amount: "12.5",
            currency: "USDT",
            uses: 0,
            order_expire_minutes: 15,
            url: `http://facet.test/pay/${id}`,
            totals: { orders: { PENDING: 0, PAID: 0 }, paid: [] }
          })
          // the same key: the same link; the same key with another body: 409
          const replay = yield* client.request("POST", "/v1/payment-links", {
            apiKey,
            json: { ...json, amount: "12.5" },
            headers: { "x-service-idempotency-key": "link-1" }
          })
          expect([replay.status, asRecord(replay.body).payment_link_id]).toEqual([201, id])
          const reused = yield* client.request("POST", "/v1/payment-links", {
            apiKey,
            json: { ...json, amount: "13" },
            headers: { "x-service-idempotency-key": "link-1" }
          })
          expect(reused.status).toBe(409)

          // the public page: product and price, nothing of the merchant's
          const shown = yield* client.request("GET", `/pay/${id}`)
          expect(shown.status).toBe(200)
          expect(shown.headers.get("content-security-policy")).toContain("form-action 'self'")
          expect(shown.text).toContain("Blue mug")
          expect(shown.text).toContain("12.5 USDT")
          expect(shown.text).not.toContain(apiKey)

          // two visits, two orders, each with its own address, the link's id, metadata and product
          const first = orderOf(yield* visit(id, { asset: "TRC20-USDT" }))
          const second = orderOf(yield* visit(id))
          const order = asRecord((yield* client.request("GET", `/v1/orders/${first}`, { apiKey })).body)
          const other = asRecord((yield* client.request("GET", `/v1/orders/${second}`, { apiKey })).body)
          expect(order).toMatchObject({
            payment_link_id: id,
            amount: "12.5",
            currency: "USDT",
            chain: "TRC20",
            product_name: "Blue mug",
            product_desc: "Stoneware, 350 ml",
            metadata: { sku: "mug-1" },
            return_url: "https://shop.example/thanks",
            status: "PENDING"
          })
          expect(other.payment_link_id).toBe(id)
          expect(other.pay_address).not.toBe(order.pay_address)

          // paid on the devnet: PAID, and the link counts it
          yield* pay("TRC20-USDT", String(order.pay_address), "12.5")
          const paid = yield* eventually(
            client.request("GET", `/v1/orders/${first}`, { apiKey }),
            (r) => asRecord(r.body).status === "PAID",
            60_000
          )
          expect(asRecord(paid.body)).toMatchObject({ status: "PAID", payment_link_id: id })
          const after = asRecord((yield* client.request("GET", `/v1/payment-links/${id}`, { apiKey })).body)
          expect(after).toMatchObject({
            status: "active",
            uses: 1,
            totals: {
              orders: { PAID: 1, PENDING: 1, EXPIRED: 0 },
              paid: [{ asset_key: "TRC20-USDT", chain: "TRC20", currency: "USDT", amount: "12.5" }]
            }
          })
          const ofLink = asRecord(
            (yield* client.request("GET", `/v1/payment-links/${id}/orders?status=PAID`, { apiKey })).body
          )
          expect(ofLink).toMatchObject({ total: 1, page: 1, size: 20 })
          expect(items(ofLink).map((o) => o.order_id)).toEqual([first])
          const listed = yield* client.request("GET", "/v1/payment-links?active=true&limit=10", { apiKey })
          expect(asRecord(listed.body)).toMatchObject({ total: 1, limit: 10, offset: 0 })
          // an order of the API carries no link
          const plain = asRecord(
            (yield* client.request("POST", "/v1/orders", { apiKey, json: { amount: "1", currency: "USDT" } })).body
          )
          expect(plain.payment_link_id).toBeUndefined()
        })
    )

    it.scoped(
      "a customer-chosen amount within bounds and a choice of asset; out of bounds, bad amounts and unknown assets are refused with no order",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const link = yield* createLink(apiKey, {
            product_name: "Tip jar",
            min_amount: "1",
            max_amount: "100",
            currency: "USDT",
            accepted_assets: [
              { chain: "TRC20", currency: "USDT" },
              { chain: "BEP20", currency: "usdt" }
            ],
            order_expire_minutes: 30,
            max_uses: 50
          })
          const id = String(link.payment_link_id)
          expect(link).toMatchObject({ min_amount: "1", max_amount: "100", max_uses: 50 })
          const shown = yield* client.request("GET", `/pay/${id}`)
          expect(shown.text).toContain('name="amount"')
          expect(shown.text).toContain('<option value="BEP20-USDT">')
          for (const [fields, says] of [
            [{ amount: "0.5", asset: "TRC20-USDT" }, "at least 1 USDT"],
            [{ amount: "100.01", asset: "TRC20-USDT" }, "at most 100 USDT"],
            [{ amount: "ten", asset: "TRC20-USDT" }, "Enter an amount"],
            [{ amount: "2.1234567", asset: "TRC20-USDT" }, "more than 6 fractional digits"],
            [{ amount: "5", asset: "SOLANA-USDT" }, "Pick one of TRC20-USDT, BEP20-USDT"]
          ] as const) {
            const refused = yield* visit(id, fields)
            expect(refused.status, JSON.stringify(fields)).toBe(400)
            expect(refused.text).toContain(says)
          }
          expect(yield* ordersOfLink(id)).toBe(0)

          const orderId = orderOf(yield* visit(id, { amount: "42.5", asset: "BEP20-USDT" }))
          const order = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(order).toMatchObject({ amount: "42.5", chain: "BEP20", checkout_mode: "single_asset" })
          expect(items({ items: order.available_assets }).map((a) => a.asset_key)).toEqual(["BEP20-USDT"])
          const minutes = (Date.parse(String(order.expire_at)) - Date.parse(String(order.created_at))) / 60_000
          expect(minutes).toBeCloseTo(30, 1)
          // no asset picked (a page without the choice): an order payable in every asset of the link
          const both = orderOf(yield* visit(id, { amount: "1" }))
          const multi = asRecord((yield* client.request("GET", `/v1/orders/${both}`, { apiKey })).body)
          expect(items({ items: multi.available_assets }).map((a) => a.asset_key)).toEqual(["TRC20-USDT", "BEP20-USDT"])
        })
    )

    it.scoped(
      "the API refuses bad links (400), a key without the orders scope (403) and another merchant's link (404), writing nothing",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const keys = yield* ApiKeys
          const a = yield* onboardMerchant()
          const b = yield* onboardMerchant()
          const valid = { product_name: "Poster", amount: "5", currency: "USDT" }
          const count = sql<{
            n: number
          }>`SELECT (SELECT count(*) FROM payment_links WHERE merchant_id = ${a.merchantId})::int
              + (SELECT count(*) FROM audit_log WHERE merchant_id = ${a.merchantId})::int AS n`.pipe(
            Effect.map((rows) => rows[0]?.n ?? -1),
            Effect.orDie
          )
          const before = yield* count
          for (const [body, says] of [
            [{ ...valid, min_amount: "1" }, "not both"],
            [{ product_name: "Poster", currency: "USDT" }, "give amount"],
            [{ product_name: "Poster", min_amount: "10", max_amount: "5" }, "min_amount must not be greater"],
            [{ ...valid, amount: "5.1234567" }, "more than 6 fractional digits"],
            [{ ...valid, accepted_assets: [{ chain: "SOLANA", currency: "USDT" }] }, "only live assets"],
            [{ ...valid, chain: "POLYGON" }, "POLYGON is sunset"],
            [{ ...valid, accepted_assets: [{ chain: "TRC20", currency: "TRX" }] }, "priced in"],
            [{ ...valid, expires_at: "2020-01-01T00:00:00Z" }, "in the future"],
            [{ ...valid, expires_at: "tomorrow" }, "date-time"],
            [{ ...valid, max_uses: 0 }, "max_uses"],
            [{ ...valid, order_expire_minutes: 1441 }, "order_expire_minutes"],
            [{ ...valid, exchange_rate: "7" }, "exchange_rate"],
            [{ ...valid, product_name: "  " }, "product_name"]
          ] as const) {
            const res = yield* client.request("POST", "/v1/payment-links", { apiKey: a.apiKey, json: body })
            expect([res.status, res.text], JSON.stringify(body)).toEqual([400, expect.stringContaining(says)])
            expect(Object.keys(asRecord(res.body))).toEqual(["error"])
          }
          expect(yield* count).toBe(before)

          // a key without the orders scope reads, but neither creates nor deactivates
          const link = yield* createLink(a.apiKey, valid)
          const id = String(link.payment_link_id)
          const reader = Redacted.value(
            (yield* keys.issue(a.merchantId, ["read"], "reader", { kind: "operator", name: "test" })).key
          )
          const denied = yield* client.request("POST", "/v1/payment-links", { apiKey: reader, json: valid })
          expect([denied.status, denied.text]).toEqual([403, expect.stringContaining("orders scope")])
          expect((yield* client.request("POST", `/v1/payment-links/${id}/deactivate`, { apiKey: reader })).status).toBe(
            403
          )
          expect((yield* client.request("GET", `/v1/payment-links/${id}`, { apiKey: reader })).status).toBe(200)

          // another merchant's link is not found, whatever it asks
          for (const [method, p] of [
            ["GET", `/v1/payment-links/${id}`],
            ["POST", `/v1/payment-links/${id}/deactivate`],
            ["GET", `/v1/payment-links/${id}/orders`]
          ] as const) {
            const res = yield* client.request(method, p, { apiKey: b.apiKey })
            expect([res.status, res.text.includes("Poster")], `${method} ${p}`).toEqual([404, false])
          }
          expect(asRecord((yield* client.request("GET", "/v1/payment-links", { apiKey: b.apiKey })).body).total).toBe(0)
          const unknown = yield* client.request("GET", "/pay/plink_nothing_here")
          expect([unknown.status, unknown.text.includes("not found")]).toEqual([404, true])
          expect((yield* visit("plink_nothing_here", { amount: "1" })).status).toBe(404)
          // odd bodies on the public form: refused, never a 5xx, no order
          const target = yield* createLink(a.apiKey, { product_name: "Gift card", min_amount: "1", currency: "USDT" })
          for (const [rawBody, type] of [
            ["", "application/x-www-form-urlencoded"],
            ["", "application/json"],
            ['{"amount":5}', "application/json"],
            ["amount=1&amount=2", "application/x-www-form-urlencoded"],
            ["amount=%00", "application/x-www-form-urlencoded"],
            ["amount=1e3", "text/plain"]
          ] as const) {
            const odd = yield* client.request("POST", `/pay/${String(target.payment_link_id)}`, {
              rawBody,
              headers: { "content-type": type }
            })
            expect([odd.status >= 400 && odd.status < 500, odd.status], `${type} ${rawBody}`).toEqual([
              true,
              odd.status
            ])
          }
          expect(yield* ordersOfLink(String(target.payment_link_id))).toBe(0)
          expect((yield* client.request("GET", `/v1/payment-links/${id}`, { apiKey: a.apiKey })).status).toBe(200)
          expect((yield* client.request("GET", "/v1/payment-links?active=maybe", { apiKey: a.apiKey })).status).toBe(
            400
          )
          // the endpoints are in the contract document; the public page is not
          const paths = Object.keys(asRecord(asRecord((yield* client.request("GET", "/v1/openapi.json")).body).paths))
          expect(paths.filter((p) => p.includes("pay"))).toEqual([
            "/v1/payment-links",
            "/v1/payment-links/{payment_link_id}",
            "/v1/payment-links/{payment_link_id}/deactivate",
            "/v1/payment-links/{payment_link_id}/orders"
          ])
        })
    )

    // issue 46, defect 7: a use was any order not EXPIRED, so anonymous visits (no payment, one form post
    // each) took a link's uses until their orders expired and closed it to paying customers
    it.scoped(
      "uses are paid orders: visits, abandoned orders and partial payments never close a link; a payment closes it; a customer already at checkout still pays and uses pass max_uses; deactivated and expired links refuse visits (409)",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const single = yield* createLink(apiKey, {
            product_name: "Concert ticket",
            amount: "3",
            currency: "USDT",
            chain: "TRC20",
            max_uses: 1
          })
          const id = String(single.payment_link_id)
          const linkNow = Effect.map(client.request("GET", `/v1/payment-links/${id}`, { apiKey }), (r) =>
            asRecord(r.body)
          )
          const orderNow = (orderId: string) =>
            Effect.map(client.request("GET", `/v1/orders/${orderId}`, { apiKey }), (r) => asRecord(r.body))
          const untilPaid = (orderId: string) =>
            eventually(
              client.request("GET", `/v1/orders/${orderId}`, { apiKey }),
              (r) => asRecord(r.body).status === "PAID",
              60_000
            )

          // visitors who never pay, at once and one after another: an order each, and not one use
          const racing = yield* Effect.all([visit(id), visit(id), visit(id)], { concurrency: "unbounded" })
          const idle = [...racing.map(orderOf), orderOf(yield* visit(id))]
          expect(yield* ordersOfLink(id)).toBe(4)
          expect(yield* linkNow).toMatchObject({ status: "active", active: true, uses: 0, max_uses: 1 })
          // one of them paid a part (1 of 3), confirmed: still not a use
          const [dusted = "", abandoned = ""] = idle
          yield* pay("TRC20-USDT", String((yield* orderNow(dusted)).pay_address), "1")
          yield* eventually(
            client.request("GET", `/v1/orders/${dusted}`, { apiKey }),
            (r) => asRecord(r.body).paid_amount === "1.000000",
            60_000
          )
          // another walked away: their order expires, and nothing was ever taken to give back
          yield* sql`UPDATE orders SET expire_at = now() - interval '1 second' WHERE id = ${abandoned}`
          yield* eventually(
            client.request("GET", `/v1/orders/${abandoned}`, { apiKey }),
            (r) => asRecord(r.body).status === "EXPIRED",
            30_000
          )
          expect(yield* linkNow).toMatchObject({
            status: "active",
            uses: 0,
            totals: { orders: { PENDING: 3, EXPIRED: 1, PAID: 0 } }
          })

          // a paying customer gets through, and their payment takes the one use: the link is completed
          const customer = orderOf(yield* visit(id))
          // another customer opened their checkout before the limit was reached
          const atCheckout = orderOf(yield* visit(id))
          yield* pay("TRC20-USDT", String((yield* orderNow(customer)).pay_address), "3")
          yield* untilPaid(customer)
          expect(yield* linkNow).toMatchObject({ status: "completed", active: false, uses: 1, max_uses: 1 })
          const usedUp = yield* visit(id)
          expect([usedUp.status, usedUp.text.includes("reached its limit")]).toEqual([409, true])
          expect((yield* client.request("GET", `/pay/${id}`)).status).toBe(409)
          // ... and pays anyway: honoured (PAID, credited), so the link shows more uses than max_uses
          yield* pay("TRC20-USDT", String((yield* orderNow(atCheckout)).pay_address), "3")
          yield* untilPaid(atCheckout)
          expect(yield* linkNow).toMatchObject({
            status: "completed",
            uses: 2,
            max_uses: 1,
            totals: { orders: { PAID: 2, PENDING: 3, EXPIRED: 1 } }
          })
          expect(yield* ordersOfLink(id)).toBe(6)

          // deactivated: idempotent, logged once, and the page says so
          const other = yield* createLink(apiKey, { product_name: "Sticker", amount: "2", currency: "USDT" })
          const otherId = String(other.payment_link_id)
          for (let i = 0; i < 2; i++) {
            const off = yield* client.request("POST", `/v1/payment-links/${otherId}/deactivate`, { apiKey })
            expect([off.status, asRecord(off.body).status]).toEqual([200, "inactive"])
          }
          const refused = yield* visit(otherId)
          expect([refused.status, refused.text.includes("turned off by the merchant")]).toEqual([409, true])
          const logged = yield* sql<{ action: string; actor_kind: string }>`
            SELECT action, actor_kind FROM audit_log WHERE merchant_id = ${merchantId} AND subject = ${otherId} ORDER BY id`
          expect(logged).toEqual([
            { action: "payment_link.created", actor_kind: "api_key" },
            { action: "payment_link.deactivated", actor_kind: "api_key" }
          ])

          // expired: past expires_at, no visit
          const soon = yield* createLink(apiKey, {
            product_name: "Early bird",
            amount: "3",
            currency: "USDT",
            expires_at: new Date(Date.now() + 3_600_000).toISOString()
          })
          const soonId = String(soon.payment_link_id)
          yield* sql`UPDATE payment_links SET expires_at = now() - interval '1 second' WHERE id = ${soonId}`
          const late = yield* visit(soonId)
          expect([late.status, late.text.includes("has expired")]).toEqual([409, true])
          expect(yield* ordersOfLink(otherId)).toBe(0)
          expect(yield* ordersOfLink(soonId)).toBe(0)
          const closed = items((yield* client.request("GET", "/v1/payment-links?active=false", { apiKey })).body).map(
            (l) => [l.product_name, l.status]
          )
          expect(closed).toEqual([
            ["Early bird", "expired"],
            ["Sticker", "inactive"],
            ["Concert ticket", "completed"]
          ])
        })
    )

    it.scoped(
      "a link's page takes a burst of visits a minute, a smaller one from each client address, then answers 429 with Retry-After; one address alone cannot close it to the others",
      () =>
        Effect.gen(function* () {
          const { apiKey } = yield* onboardMerchant()
          const link = yield* createLink(apiKey, { product_name: "Donation", min_amount: "1", currency: "USDT" })
          const id = String(link.payment_link_id)
          // one address submits as fast as it can: its share, then 429 — and its refused tries take nothing
          for (let i = 0; i < VISITS_PER_CLIENT; i++)
            expect((yield* visitFrom("127.0.0.2", id, { amount: "0" })).status).toBe(400)
          for (let i = 0; i < 3; i++) {
            const refused = yield* visitFrom("127.0.0.2", id, { amount: "5" })
            expect(refused.status).toBe(429)
            expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1)
          }
          // another customer still gets through, up to what is left of the link's minute
          for (let i = 0; i < VISITS_PER_MINUTE - VISITS_PER_CLIENT; i++)
            expect((yield* visitFrom("127.0.0.3", id, { amount: "0" })).status).toBe(400)
          // then the link's own limit holds for everyone
          const limited = yield* visitFrom("127.0.0.4", id, { amount: "5" })
          expect(limited.status).toBe(429)
          expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1)
          expect(yield* ordersOfLink(id)).toBe(0)
        })
    )

    it.scoped(
      "the console lists links with their uses and totals, creates and deactivates one (audit-logged); a customer pays through the public page",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const browser = yield* launchBrowser
          const applied = asRecord(
            (yield* client.request("POST", "/v1/ai/merchant-apply", {
              json: {
                project_name: "Corner Bakery",
                business_type: "bakery",
                use_case: "payment links",
                agree_terms: true,
                contact_email: "owner@bakery.example"
              }
            })).body
          )
          const apiKey = String(asRecord(applied.env).FACET_API_KEY)
          const merchantId = String(asRecord(applied.env).FACET_MERCHANT_ID)
          const setupUrl = new URL(String(asRecord(applied.merchant_console).token_login_url))
          const desk = yield* run(() => browser.newPage())
          yield* run(() => desk.goto(`${client.url}${setupUrl.pathname}${setupUrl.search}`))
          yield* run(() => desk.fill("input[name=password]", PASSWORD))
          yield* run(() => desk.click("button[type=submit]"))
          yield* run(() => desk.waitForURL(/\/console\/withdrawals$/))

          // a link from the API, paid once, and one made in the console
          const api = yield* createLink(apiKey, {
            product_name: "Sourdough loaf",
            amount: "6",
            currency: "USDT",
            chain: "TRC20",
            max_uses: 100
          })
          const paidOrder = orderOf(yield* visit(String(api.payment_link_id)))
          const order = asRecord((yield* client.request("GET", `/v1/orders/${paidOrder}`, { apiKey })).body)
          yield* pay("TRC20-USDT", String(order.pay_address), "6")
          yield* eventually(
            client.request("GET", `/v1/orders/${paidOrder}`, { apiKey }),
            (r) => asRecord(r.body).status === "PAID",
            60_000
          )
          yield* run(() => desk.goto(`${client.url}/console/payment-links`))
          yield* run(() => desk.click("details.new-link summary"))
          yield* run(() => desk.fill("form.create input[name=product_name]", "Birthday cake"))
          yield* run(() => desk.fill("form.create input[name=product_desc]", "Chocolate, for 8, picked up in store"))
          yield* run(() => desk.fill("form.create input[name=min_amount]", "20"))
          yield* run(() => desk.fill("form.create input[name=max_amount]", "80"))
          yield* run(() => desk.check("form.create input[value=TRC20-USDT]"))
          yield* run(() => desk.check("form.create input[value=BEP20-USDT]"))
          yield* run(() => desk.fill("form.create input[name=max_uses]", "12"))
          yield* run(() => desk.click("form.create button"))
          const made = (yield* run(() => desk.textContent(".notice"))) ?? ""
          expect(made).toContain("Payment link created: http://facet.test/pay/plink_")
          const cakeId = /plink_\w+/.exec(made)?.[0] ?? ""
          expect(yield* run(() => desk.textContent(`#${api.payment_link_id} .paid`))).toBe("6 TRC20-USDT")
          expect(yield* run(() => desk.textContent(`#${api.payment_link_id} .uses`))).toBe("1 / 100")
          expect(yield* run(() => desk.textContent(`#${cakeId} .uses`))).toBe("0 / 12")
          yield* screenshot(desk, "console-payment-links.png")

          // a customer on a phone: the public page, an amount, an asset, on to the checkout
          const phone = yield* run(() => browser.newPage({ viewport: { width: 390, height: 844 } }))
          const opened = yield* run(() => phone.goto(`${client.url}/pay/${cakeId}`))
          expect(opened?.status()).toBe(200)
          expect(yield* run(() => phone.textContent("main"))).toContain("Birthday cake")
          yield* run(() => phone.fill("#amount", "35"))
          yield* run(() => phone.selectOption("#asset", "TRC20-USDT"))
          expect(yield* run(() => phone.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(390)
          yield* screenshot(phone, "pay-link.png")
          yield* run(() => phone.click("button[type=submit]"))
          yield* run(() => phone.waitForURL(/\/checkout\/ord_\w+$/))
          expect(yield* run(() => phone.textContent("main"))).toContain("35 USDT")

          // the link's page lists that order; deactivating it from the console stops its page
          yield* run(() => desk.goto(`${client.url}/console/payment-links/${cakeId}`))
          expect(yield* run(() => desk.textContent("table"))).toContain("35 USDT")
          yield* screenshot(desk, "console-payment-link.png")
          yield* run(() => desk.click("form.deactivate button"))
          expect(yield* run(() => desk.textContent(".notice"))).toContain("deactivated")
          expect(yield* run(() => desk.getAttribute(`#${cakeId}`, "data-status"))).toBe("inactive")
          yield* run(() => phone.goto(`${client.url}/pay/${cakeId}`))
          expect(yield* run(() => phone.textContent(".closed"))).toContain("turned off")
          const logged = yield* sql<{ action: string; actor_kind: string }>`
            SELECT action, actor_kind FROM audit_log WHERE merchant_id = ${merchantId} AND subject = ${cakeId} ORDER BY id`
          expect(logged).toEqual([
            { action: "payment_link.created", actor_kind: "console_user" },
            { action: "payment_link.deactivated", actor_kind: "console_user" }
          ])
          // another merchant's link in a console URL is not found
          const foreign = yield* run(() => desk.goto(`${client.url}/console/payment-links/plink_of_someone_else`))
          expect(foreign?.status()).toBe(404)
        })
    )
  })
})

describe("payment link pages", () => {
  // a value that would open a script or break out of a quoted attribute into an element
  const HOSTILE = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
  const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img src=x onerror=alert(2)&gt;"
  const expectEscaped = (text: string) => {
    expect(text).toContain(ESCAPED)
    expect(text).not.toContain("<script")
    expect(text).not.toContain("<img")
  }

  it("escape every value the merchant or the customer wrote", () => {
    const link: PaymentLink = {
      payment_link_id: HOSTILE,
      url: HOSTILE,
      status: "active",
      active: true,
      product_name: HOSTILE,
      product_desc: HOSTILE,
      min_amount: HOSTILE,
      max_amount: HOSTILE,
      currency: HOSTILE,
      uses: 0,
      order_expire_minutes: 15,
      totals: {
        orders: { PENDING: 0, CONFIRMING: 0, PAID: 0, PARTIALLY_PAID: 0, EXPIRED: 0 },
        paid: [{ asset_key: HOSTILE, chain: "TRC20", currency: HOSTILE, amount: "1" }]
      },
      created_at: HOSTILE,
      updated_at: HOSTILE
    }
    const session: ConsoleSession = {
      userId: HOSTILE,
      merchantId: HOSTILE,
      loginName: HOSTILE,
      role: "owner",
      csrfToken: HOSTILE,
      totp: false
    }
    expectEscaped(paymentLinksPage(session, [link], 1, { assets: [HOSTILE] }, HOSTILE).text)
    expectEscaped(paymentLinkPage(session, link, [], 0, HOSTILE).text)
    expectEscaped(
      renderPayPage(
        {
          paymentLinkId: HOSTILE,
          merchantName: HOSTILE,
          productName: HOSTILE,
          productDesc: HOSTILE,
          amount: undefined,
          minAmount: HOSTILE,
          maxAmount: HOSTILE,
          currency: HOSTILE,
          assets: [
            { key: HOSTILE, chain: "TRC20", currency: HOSTILE, network: HOSTILE },
            { key: "BEP20-USDT", chain: "BEP20", currency: "USDT", network: "BNB Smart Chain (BEP20)" }
          ],
          closed: Option.none()
        },
        HOSTILE,
        HOSTILE
      )
    )
  })
})
