import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import jsQRModule from "jsqr"
import * as path from "node:path"
import type { Page } from "playwright-core"
import { PNG } from "pngjs"
import { launchBrowser } from "../test/browser.js"
import { pay } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { UnderpaymentTolerances } from "../src/orders/underpayment-tolerance.js"
import { eventually, startReceiver } from "../test/webhook-receiver.js"

// CommonJS: typed as the module object whose `default` is the decoder (also there at run time)
const jsQR = jsQRModule.default

/** The text of the QR code in a PNG screenshot. */
const readQr = (png: Buffer) => {
  const image = PNG.sync.read(png)
  return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data
}

/** With FACET_SCREENSHOTS_DIR set (e.g. `docs`), the pages are saved there for docs/console-and-checkout.md. */
const screenshot = (page: Page, name: string) => {
  const dir = process.env.FACET_SCREENSHOTS_DIR
  return dir === undefined
    ? Effect.void
    : Effect.promise(() => page.screenshot({ path: path.join(dir, name), fullPage: true }))
}

describe("hosted checkout page in a real browser", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.scoped(
      "shows the order with a scannable QR code, follows the payment to PAID without a reload, fits a phone",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const browser = yield* launchBrowser
          const { apiKey } = yield* onboardMerchant({
            project_name: `Corner Shop ${Date.now()}`,
            return_url: "https://shop.example/thanks"
          })
          const created = yield* client.request("POST", "/v1/orders", {
            apiKey,
            json: {
              amount: "12.5",
              currency: "USDT",
              chain: "TRC20",
              product_name: "Blue mug",
              return_url: "https://shop.example/thanks"
            }
          })
          expect(created.status, created.text).toBe(201)
          const order = asRecord(created.body)
          // checkout_url carries the public base URL; the test reaches the same path on the service under test
          const url = `${client.url}${new URL(String(order.checkout_url)).pathname}`

          const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 390, height: 844 } }))
          const response = yield* Effect.promise(() => page.goto(url))
          expect(response?.status()).toBe(200)
          expect(response?.headers()["content-security-policy"]).toContain("default-src 'none'")
          const text = yield* Effect.promise(() => page.textContent("main"))
          expect(text).toContain("Blue mug")
          expect(text).toContain("12.5 USDT")
          expect(text).toContain(String(order.pay_address))
          expect(text).toContain("TRON (TRC20)")
          expect(text).not.toContain(apiKey)
          // a phone shows it all without scrolling sideways
          const scrollWidth = yield* Effect.promise(() => page.evaluate("document.documentElement.scrollWidth"))
          expect(scrollWidth).toBeLessThanOrEqual(390)
          // the QR code scans to the order's payment URI
          expect(yield* Effect.promise(() => page.isVisible("#return"))).toBe(false)
          yield* screenshot(page, "checkout-pending.png")
          const qr = yield* Effect.promise(() => page.locator(".qr").first().screenshot())
          expect(readQr(qr)).toBe(order.pay_qrcode)

          // paid on the devnet: the open page moves on by itself
          yield* pay("TRC20-USDT", String(order.pay_address), "12.5")
          yield* Effect.promise(() =>
            page.waitForSelector("#status[data-status=CONFIRMING], #status[data-status=PAID]", { timeout: 30_000 })
          )
          yield* Effect.promise(() => page.waitForSelector("#status[data-status=PAID]", { timeout: 30_000 }))
          expect(yield* Effect.promise(() => page.textContent("#status"))).toBe("Paid")
          expect(yield* Effect.promise(() => page.isVisible("#return"))).toBe(true)
          // a paid order no longer invites a payment
          expect(yield* Effect.promise(() => page.isVisible(".qr"))).toBe(false)
          yield* screenshot(page, "checkout-paid.png")
          yield* Effect.promise(() => page.close())
        })
    )

    it.scoped(
      "an expired order says so, and a payment after it is noticed as late; an unknown order is a 404 page",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const browser = yield* launchBrowser
          const { apiKey } = yield* onboardMerchant()
          const order = asRecord(
            (yield* client.request("POST", "/v1/orders", {
              apiKey,
              json: { amount: "3", currency: "USDT", chain: "BEP20", expire_minutes: 1 }
            })).body
          )
          yield* sql`UPDATE orders SET expire_at = now() - interval '1 minute' WHERE id = ${String(order.order_id)}`
          const page = yield* Effect.promise(() => browser.newPage())
          yield* Effect.promise(() => page.goto(`${client.url}/checkout/${String(order.order_id)}`))
          yield* Effect.promise(() => page.waitForSelector("#status[data-status=EXPIRED]", { timeout: 30_000 }))
          // paid in full after its time was up: credited, PAID, and the page says the payment was late
          yield* pay("BEP20-USDT", String(order.pay_address), "3")
          yield* Effect.promise(() => page.waitForSelector("#status[data-status=PAID]", { timeout: 30_000 }))
          expect(yield* Effect.promise(() => page.isVisible("#late"))).toBe(true)
          const missing = yield* Effect.promise(() => page.goto(`${client.url}/checkout/ord_nothing_here`))
          expect(missing?.status()).toBe(404)
          expect(yield* Effect.promise(() => page.textContent("main"))).toContain("Order not found")
        })
    )

    it.scoped("a multi-asset order lets the customer choose; a partial payment shows what is still due", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const browser = yield* launchBrowser
        const { apiKey } = yield* onboardMerchant()
        const order = asRecord(
          (yield* client.request("POST", "/v1/orders", {
            apiKey,
            json: {
              amount: "20",
              currency: "USDT",
              checkout_mode: "multi_asset",
              accepted_assets: [
                { chain: "TRC20", currency: "USDT" },
                { chain: "BEP20", currency: "USDT" }
              ]
            }
          })).body
        )
        const assets = Array.isArray(order.available_assets) ? order.available_assets.map(asRecord) : []
        const bep20 = assets.find((a) => a.chain === "BEP20")
        const tron = assets.find((a) => a.chain === "TRC20")
        const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 390, height: 844 } }))
        yield* Effect.promise(() => page.goto(`${client.url}/checkout/${String(order.order_id)}`))
        yield* Effect.promise(() => page.selectOption("#asset-choice", "1"))
        expect(yield* Effect.promise(() => page.isVisible("section.asset[data-asset='1']"))).toBe(true)
        expect(yield* Effect.promise(() => page.isVisible("section.asset[data-asset='0']"))).toBe(false)
        expect(
          readQr(yield* Effect.promise(() => page.locator("section.asset[data-asset='1'] .qr").screenshot()))
        ).toBe(bep20?.pay_qrcode)

        // 5 of 20 paid on TRON, then the order's time is up: PARTIALLY_PAID with 15 still due
        yield* pay("TRC20-USDT", String(tron?.pay_address), "5")
        yield* eventually(
          client.request("GET", `/v1/orders/${String(order.order_id)}`, { apiKey }),
          (r) => asRecord(r.body).paid_amount === "5.000000",
          30_000
        )
        // before its time is up the page already says what is still due
        yield* Effect.promise(() =>
          page.locator("#detail", { hasText: "15 USDT still due" }).waitFor({ timeout: 30_000 })
        )
        yield* sql`UPDATE orders SET expire_at = now() - interval '1 second' WHERE id = ${String(order.order_id)}`
        yield* Effect.promise(() => page.waitForSelector("#status[data-status=PARTIALLY_PAID]", { timeout: 30_000 }))
        expect(yield* Effect.promise(() => page.textContent("#detail"))).toContain("15 USDT still due")
      })
    )

    it.scoped(
      "underpayment tolerance: short by less is PAID at once with underpaid_amount, in the webhook and on the page; short by more is not",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const browser = yield* launchBrowser
          const receiver = yield* startReceiver()
          const { apiKey, merchantId } = yield* onboardMerchant()
          // 0.3 USDT on TRON, as the owner sets it in the console (indexer/underpayment-tolerance.test.ts)
          yield* (yield* UnderpaymentTolerances).set(
            merchantId,
            "TRC20-USDT",
            { percent: "", amount: "0.3" },
            { kind: "operator", name: "test" }
          )
          const create = () =>
            Effect.map(
              client.request("POST", "/v1/orders", {
                apiKey,
                json: { amount: "10", currency: "USDT", chain: "TRC20", notify_url: receiver.url }
              }),
              (r) => asRecord(r.body)
            )
          const within = yield* create()
          const beyond = yield* create()
          const page = yield* Effect.promise(() => browser.newPage({ viewport: { width: 390, height: 844 } }))
          yield* Effect.promise(() => page.goto(`${client.url}/checkout/${String(within.order_id)}`))

          // an exchange kept 0.25 of the customer's 10: within 0.3, PAID on confirmation
          yield* pay("TRC20-USDT", String(within.pay_address), "9.75")
          yield* pay("TRC20-USDT", String(beyond.pay_address), "9.6")
          yield* Effect.promise(() => page.waitForSelector("#status[data-status=PAID]", { timeout: 30_000 }))
          expect(yield* Effect.promise(() => page.textContent("#detail"))).toContain(
            "paid (within the merchant's tolerance)"
          )
          expect(yield* Effect.promise(() => page.isVisible(".qr"))).toBe(false)
          yield* screenshot(page, "checkout-paid-within-tolerance.png")
          expect(
            asRecord((yield* client.request("GET", `/v1/orders/${String(within.order_id)}`, { apiKey })).body)
          ).toMatchObject({ status: "PAID", underpaid_amount: "0.25" })
          // the webhook says so: payment.confirmed with the order PAID and its underpaid_amount
          const confirmed = yield* eventually(
            Effect.sync(() =>
              receiver.received
                .map((r) => asRecord(JSON.parse(r.rawBody.toString("utf8"))))
                .filter((b) => b.event === "payment.confirmed" && asRecord(b.order).order_id === within.order_id)
            ),
            (bodies) => bodies.length > 0,
            30_000
          )
          expect(asRecord(confirmed[0]?.order)).toMatchObject({ status: "PAID", underpaid_amount: "0.25" })

          // short by 0.4: confirmed, not paid, the rest still asked for
          const short = yield* eventually(
            Effect.map(client.request("GET", `/v1/orders/${String(beyond.order_id)}`, { apiKey }), (r) =>
              asRecord(r.body)
            ),
            (o) => o.paid_amount === "9.600000",
            30_000
          )
          expect(short.status).toBe("PENDING")
          expect(short).not.toHaveProperty("underpaid_amount")
          yield* Effect.promise(() => page.goto(`${client.url}/checkout/${String(beyond.order_id)}`))
          yield* Effect.promise(() =>
            page.locator("#detail", { hasText: "0.4 USDT still due" }).waitFor({ timeout: 30_000 })
          )
        })
    )
  })
})
