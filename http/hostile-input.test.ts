import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { onboardMerchant } from "../test/merchants.js"

/** What a hostile client tried (issue #14's list): every answer a 4xx `{error}`, never a 500, nothing stored. */
describe("hostile input", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect(
      "NUL characters, deep nesting, huge strings and amounts, wrong content types, odd paging and ids are 4xx {error}",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const answers: Array<[string, number, string]> = []
          const probe = (
            what: string,
            method: string,
            path: string,
            options: { json?: unknown; rawBody?: string; headers?: Record<string, string> } = {}
          ) =>
            Effect.map(client.request(method, path, { apiKey, ...options }), (r) => {
              answers.push([what, r.status, r.text.slice(0, 160)])
              return r
            })
          yield* probe("NUL in a path segment", "GET", "/v1/orders/ord_%00abc")
          yield* probe("NUL in a body string", "POST", "/v1/orders", {
            json: { amount: "5", currency: "USDT", chain: "TRC20", out_trade_no: "a\u0000b" }
          })
          yield* probe("100,000 nested arrays", "POST", "/v1/orders", {
            rawBody: "[".repeat(100_000) + "]".repeat(100_000)
          })
          yield* probe("100,000-character out_trade_no", "POST", "/v1/orders", {
            json: { amount: "5", currency: "USDT", chain: "TRC20", out_trade_no: "x".repeat(100_000) }
          })
          yield* probe("an order of 10^38 USDT", "POST", "/v1/orders", {
            json: { amount: "1" + "0".repeat(38), currency: "USDT", chain: "TRC20" }
          })
          yield* probe("a form-encoded body", "POST", "/v1/orders", {
            rawBody: "amount=5&currency=USDT&chain=TRC20",
            headers: { "content-type": "application/x-www-form-urlencoded" }
          })
          yield* probe("page=1e3", "GET", "/v1/orders?page=1e3")
          yield* probe("limit=0x10", "GET", "/v1/withdrawals?limit=0x10")
          yield* probe("an amount with 19 fractional digits", "POST", "/v1/withdrawal-fee-quote", {
            json: { chain: "TRC20", currency: "USDT", amount: "1.0000000000000000001" }
          })
          const longId = yield* probe("a 5,000-character order id", "GET", `/v1/orders/${"o".repeat(5000)}`)
          expect(longId.status).toBe(404)
          expect(longId.text.length).toBeLessThan(300)
          // a batch with continue_on_error: the item with an empty external_user_id fails alone, saying why
          const batch = yield* client.request("POST", "/v1/deposit-addresses/batch", {
            apiKey,
            json: {
              items: [
                { external_user_id: "ok-1", chain: "TRC20", currency: "USDT" },
                { external_user_id: "", chain: "TRC20", currency: "USDT" }
              ],
              continue_on_error: true
            }
          })
          expect(batch.status, batch.text).toBe(200)
          expect(batch.body).toMatchObject({
            total: 2,
            succeeded: 1,
            failed: 1,
            items: [
              { index: 0, status: "created" },
              { index: 1, status: "failed", error: "external_user_id: external_user_id must have at least 1 character" }
            ]
          })
          // without it, nothing is created and the error names the item, not the schema's union
          const strict = yield* client.request("POST", "/v1/deposit-addresses/batch", {
            apiKey,
            json: {
              items: [
                { external_user_id: "ok-2", chain: "TRC20", currency: "USDT" },
                { external_user_id: "", chain: "TRC20", currency: "USDT" }
              ]
            }
          })
          expect([strict.status, strict.text]).toEqual([
            400,
            '{"error":"nothing was created: items[1]: external_user_id: external_user_id must have at least 1 character"}'
          ])
          const missing = yield* client.request("POST", "/v1/deposit-addresses/batch", {
            apiKey,
            json: { items: [{ external_user_id: 5 }] }
          })
          expect(missing.status).toBe(400)
          expect(missing.text).not.toContain("Expected undefined")

          // and no refused request changed anything: not one order exists
          const orders = yield* client.request("GET", "/v1/orders", { apiKey })
          expect(orders.text).toContain('"total":0')
          const wrong = answers.filter(
            ([, status, text]) => status < 400 || status >= 500 || !text.startsWith('{"error":')
          )
          expect(wrong.map(([what, status, text]) => `${what}: ${status} ${text}`)).toEqual([])
        })
    )
  })
})
