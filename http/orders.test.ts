import { SqlClient } from "@effect/sql"
import { mnemonicToSeedSync } from "@scure/bip39"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { deriveKey } from "../src/keys/derivation.js"
import { Orders } from "../src/orders/orders.js"
import { TEST_MNEMONIC, TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"

const createOrder = (apiKey: string, json: unknown, headers: Record<string, string> = {}) =>
  Effect.flatMap(TestClient, (client) => client.request("POST", "/v1/orders", { apiKey, json, headers }))

const assetsOf = (order: Record<string, unknown>) =>
  Array.isArray(order.available_assets) ? order.available_assets.map(asRecord) : []

describe("checkout orders", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("creates a pending order on the default asset with its own derived pay address", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const before = Date.now()
        const res = yield* createOrder(apiKey, {
          amount: "12.50",
          out_trade_no: "INV-1",
          product_name: "Plan",
          metadata: { cart: 7 }
        })
        expect(res.status).toBe(201)
        const order = asRecord(res.body)
        expect(order).toMatchObject({
          status: "PENDING",
          amount: "12.50",
          paid_amount: "0",
          currency: "USDT",
          chain: "TRC20",
          out_trade_no: "INV-1",
          checkout_mode: "single_asset",
          late_payment: false,
          product_name: "Plan",
          metadata: { cart: 7 }
        })
        expect(String(order.pay_address)).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/)
        expect(order.checkout_url).toBe(`http://facet.test/checkout/${String(order.order_id)}`)
        const ttl = Date.parse(String(order.expire_at)) - before
        expect(ttl).toBeGreaterThan(14 * 60_000)
        expect(ttl).toBeLessThan(16 * 60_000)
        expect(assetsOf(order)).toHaveLength(1)

        // the address is the HD key at the wallet's recorded derivation path, and the wallet is the merchant's
        const sql = yield* SqlClient.SqlClient
        const [wallet] = yield* sql<{
          derivation_path: string
          family: "TRON"
          address: string
          kind: string
          purpose: string
        }>`
          SELECT derivation_path, family, address, kind, purpose FROM wallets WHERE address = ${String(order.pay_address)}`
        expect(wallet).toMatchObject({ kind: "receive", purpose: "order" })
        expect(deriveKey(mnemonicToSeedSync(TEST_MNEMONIC), "TRON", wallet?.derivation_path ?? "").address).toBe(
          order.pay_address
        )
        expect(wallet?.derivation_path).toMatch(/^m\/44'\/195'\/[1-9]\d*'\/0\/\d+$/)
      })
    )

    it.effect("never reuses a pay address across orders", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const results = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => createOrder(apiKey, { amount: `${i + 1}` })),
          { concurrency: 6 }
        )
        const addresses = results.map((r) => String(asRecord(r.body).pay_address))
        expect(results.every((r) => r.status === 201)).toBe(true)
        expect(new Set(addresses).size).toBe(12)
      })
    )

    it.effect("resolves chain and currency defaults and offers several assets with one address per network", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        expect(asRecord((yield* createOrder(apiKey, { amount: "5", chain: "BEP20" })).body)).toMatchObject({
          chain: "BEP20",
          currency: "USDT"
        })
        expect(asRecord((yield* createOrder(apiKey, { amount: "5", currency: "trx" })).body)).toMatchObject({
          chain: "TRC20",
          currency: "TRX"
        })
        const multi = asRecord(
          (yield* createOrder(apiKey, { amount: "5", currency: "USDT", checkout_mode: "multi_asset" })).body
        )
        expect(assetsOf(multi).map((a) => a.asset_key)).toEqual(["TRC20-USDT", "BEP20-USDT"])
        expect(String(assetsOf(multi)[1]?.pay_address)).toMatch(/^0x[0-9a-fA-F]{40}$/)

        const mixed = yield* createOrder(apiKey, {
          amount: "10",
          accepted_assets: [
            { chain: "TRC20", currency: "USDT" },
            { chain: "TRC20", currency: "TRX" },
            { chain: "BEP20", currency: "USDT" }
          ],
          exchange_rate: "3.33333333"
        })
        expect(mixed.status).toBe(201)
        const assets = assetsOf(asRecord(mixed.body))
        expect(assets.map((a) => [a.asset_key, a.amount])).toEqual([
          ["TRC20-USDT", "10"],
          ["TRC20-TRX", "33.333334"],
          ["BEP20-USDT", "10"]
        ])
        // TRON assets share the order's TRON address; BEP20 has its own
        expect(assets[0]?.pay_address).toBe(assets[1]?.pay_address)
        expect(assets[2]?.pay_address).not.toBe(assets[0]?.pay_address)
        expect(asRecord(mixed.body).checkout_mode).toBe("multi_asset")
        expect(String(assets[1]?.pay_qrcode)).toBe(`tron:${String(assets[1]?.pay_address)}?amount=33.333334`)
      })
    )

    it.effect("refuses bad orders with 400 and a reason, creating nothing", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const cases: ReadonlyArray<[unknown, RegExp]> = [
          [{ amount: "1.1234567" }, /more than 6 fractional digits/],
          [{ amount: "0" }, /greater than 0/],
          [{ amount: "-1" }, /amount/],
          [{ amount: 12.5 }, /amount/],
          [{ amount: "1e3" }, /amount/],
          [{}, /amount/],
          [{ amount: "1", expire_minutes: 0 }, /expire_minutes/],
          [{ amount: "1", expire_minutes: 1441 }, /expire_minutes/],
          [{ amount: "1", expire_minutes: 1.5 }, /expire_minutes/],
          [{ amount: "1", color: "red" }, /color/],
          [{ amount: "1", accepted_assets: [] }, /accepted_assets/],
          [{ amount: "1", accepted_assets: [{ chain: "TRC20", currency: "USDT", x: 1 }] }, /x/],
          [{ amount: "1", accepted_assets: [{ chain: "POLYGON", currency: "USDT" }] }, /POLYGON is sunset/],
          [{ amount: "1", chain: "POLYGON" }, /POLYGON is sunset/],
          [{ amount: "1", chain: "SOLANA", currency: "USDT" }, /deposit_live/],
          [{ amount: "1", accepted_assets: [{ chain: "BEP20", currency: "VELNX" }] }, /not enabled for this merchant/],
          [{ amount: "1", accepted_assets: [{ chain: "TRC20", currency: "TRX" }], currency: "USDT" }, /exchange_rate/],
          [{ amount: "1", currency: "DOGE" }, /no live asset/],
          [{ amount: "1", notify_url: "javascript:alert(1)" }, /notify_url/],
          [
            {
              amount: "1",
              accepted_assets: [
                { chain: "TRC20", currency: "USDT" },
                { chain: "TRC20", currency: "USDT" }
              ]
            },
            /twice/
          ]
        ]
        for (const [json, message] of cases) {
          const res = yield* createOrder(apiKey, json)
          expect(res.status, JSON.stringify(json)).toBe(400)
          expect(String(asRecord(res.body).error), JSON.stringify(json)).toMatch(message)
        }
        const client = yield* TestClient
        expect(asRecord((yield* client.request("GET", "/v1/orders", { apiKey })).body).total).toBe(0)
      })
    )

    it.effect("replays the same order for the same idempotency key and request, 409 for another request", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const key = { "x-service-idempotency-key": "order-42:attempt" }
        const first = yield* createOrder(apiKey, { amount: "12.5", out_trade_no: "A" }, key)
        const again = yield* createOrder(apiKey, { out_trade_no: "A", amount: "12.50" }, key)
        expect(first.status).toBe(201)
        expect(again.status).toBe(201)
        expect(asRecord(again.body).order_id).toBe(asRecord(first.body).order_id)
        const different = yield* createOrder(apiKey, { amount: "13", out_trade_no: "A" }, key)
        expect(different.status).toBe(409)
        expect(asRecord(different.body).error).toMatch(/different request/)
        // keys are per merchant: another merchant may use the same one
        const other = yield* onboardMerchant()
        const theirs = yield* createOrder(other.apiKey, { amount: "12.5", out_trade_no: "A" }, key)
        expect(theirs.status).toBe(201)
        expect(asRecord(theirs.body).order_id).not.toBe(asRecord(first.body).order_id)
        for (const bad of ["has space", "x".repeat(129), "tab\there", "ünïcode"]) {
          const res = yield* createOrder(apiKey, { amount: "1" }, { "x-service-idempotency-key": bad })
          expect(res.status, bad).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(/X-Service-Idempotency-Key/)
        }
      })
    )

    it.effect("creates one order when many requests race with one key", () =>
      Effect.gen(function* () {
        const { apiKey, merchantId } = yield* onboardMerchant()
        const results = yield* Effect.all(
          Array.from({ length: 10 }, () =>
            createOrder(apiKey, { amount: "7" }, { "x-service-idempotency-key": "race-1" })
          ),
          { concurrency: "unbounded" }
        )
        expect(results.map((r) => r.status)).toEqual(Array(10).fill(201))
        expect(new Set(results.map((r) => asRecord(r.body).order_id)).size).toBe(1)
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM orders WHERE merchant_id = ${merchantId}`
        expect(row?.n).toBe("1")
      })
    )

    it.effect("reads one order and lists them newest first with filters and paging", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const { apiKey } = yield* onboardMerchant()
        const ids: Array<string> = []
        for (const [i, chain] of ["TRC20", "BEP20", "TRC20", "BEP20", "TRC20"].entries()) {
          ids.push(String(asRecord((yield* createOrder(apiKey, { amount: `${i + 1}`, chain })).body).order_id))
        }
        const one = yield* client.request("GET", `/v1/orders/${ids[0] ?? ""}`, { apiKey })
        expect(one.status).toBe(200)
        expect(asRecord(one.body).amount).toBe("1")

        const page1 = asRecord((yield* client.request("GET", "/v1/orders?size=2", { apiKey })).body)
        expect(page1).toMatchObject({ total: 5, page: 1, size: 2 })
        const page3 = asRecord((yield* client.request("GET", "/v1/orders?size=2&page=3", { apiKey })).body)
        const listed = [
          page1,
          asRecord((yield* client.request("GET", "/v1/orders?size=2&page=2", { apiKey })).body),
          page3
        ].flatMap((p) => (Array.isArray(p.items) ? p.items.map((o) => asRecord(o).order_id) : []))
        expect(listed).toEqual([...ids].reverse())
        const bep = asRecord((yield* client.request("GET", "/v1/orders?chain=BEP20", { apiKey })).body)
        expect(bep.total).toBe(2)
        const pending = asRecord((yield* client.request("GET", "/v1/orders?status=PENDING&size=100", { apiKey })).body)
        expect(pending.total).toBe(5)
        const paid = asRecord((yield* client.request("GET", "/v1/orders?status=PAID", { apiKey })).body)
        expect(paid).toMatchObject({ total: 0, items: [] })
        for (const query of ["size=0", "size=101", "page=0", "page=x", "status=DONE", "chain=ETH"]) {
          const res = yield* client.request("GET", `/v1/orders?${query}`, { apiKey })
          expect(res.status, query).toBe(400)
        }
        const other = yield* onboardMerchant()
        expect((yield* client.request("GET", `/v1/orders/${ids[0] ?? ""}`, { apiKey: other.apiKey })).status).toBe(404)
        expect((yield* client.request("GET", "/v1/orders/ord_missing", { apiKey })).status).toBe(404)
        expect(asRecord((yield* client.request("GET", "/v1/orders", { apiKey: other.apiKey })).body).total).toBe(0)
      })
    )

    it.effect("expires unpaid orders on its own, once, with an order.updated event in the outbox", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const orders = yield* Orders
        const { apiKey } = yield* onboardMerchant()
        const unpaid = String(
          asRecord(
            (yield* createOrder(apiKey, { amount: "3", notify_url: "https://merchant.example/order-hook" })).body
          ).order_id
        )
        const partial = String(asRecord((yield* createOrder(apiKey, { amount: "3" })).body).order_id)
        const fresh = String(asRecord((yield* createOrder(apiKey, { amount: "3" })).body).order_id)
        // a confirmed, counted payment of 1: expiry decides from such rows, as settlement does (#53)
        yield* sql`UPDATE orders SET paid_amount = 1 WHERE id = ${partial}`
        yield* sql`INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index, to_address, block_number, wallet_id, order_id, counted)
                   SELECT 'txn_partial_1', merchant_id, 'deposit', 'confirmed', chain, currency, 1, 'tx-partial-1', 0, pay_address, 20, wallet_id, id, true
                   FROM orders WHERE id = ${partial}`
        yield* sql`UPDATE orders SET expire_at = now() - interval '1 second' WHERE ${sql.in("id", [unpaid, partial])}`
        // several workers at once: the background one plus two more, as if from other processes
        yield* Effect.all([orders.expireDue(10), orders.expireDue(10)], { concurrency: 2 })
        yield* Effect.sleep("600 millis")
        const status = (id: string) =>
          Effect.map(client.request("GET", `/v1/orders/${id}`, { apiKey }), (r) => asRecord(r.body).status)
        expect(yield* status(unpaid)).toBe("EXPIRED")
        expect(yield* status(partial)).toBe("PARTIALLY_PAID")
        expect(yield* status(fresh)).toBe("PENDING")
        const events = yield* sql<{
          order_id: string
          idempotency_key: string
          destination: string | null
          body: string
          event: string
        }>`
          SELECT order_id, idempotency_key, destination, body, event FROM webhook_events WHERE ${sql.in("order_id", [unpaid, partial, fresh])}
          ORDER BY idempotency_key`
        expect(events.map((e) => e.idempotency_key).sort()).toEqual(
          [`${partial}:order.partially_paid:PARTIALLY_PAID`, `${unpaid}:order.expired:EXPIRED`].sort()
        )
        const expiredEvent = events.find((e) => e.order_id === unpaid)
        expect(expiredEvent?.event).toBe("order.updated")
        expect(expiredEvent?.destination).toBe("https://merchant.example/order-hook")
        expect(events.find((e) => e.order_id === partial)?.destination).toBe("https://merchant.example/hooks")
        const body = asRecord(JSON.parse(expiredEvent?.body ?? "{}"))
        expect(body.event).toBe("order.expired")
        expect(asRecord(body.order)).toMatchObject({ order_id: unpaid, status: "EXPIRED" })
        expect(typeof body.created_at).toBe("string")
      })
    )

    it.effect("an order is not expired while a chain it can be paid on has not been indexed past expire_at", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const orders = yield* Orders
        const client = yield* TestClient
        const { apiKey } = yield* onboardMerchant()
        const created = asRecord(
          (yield* client.request("POST", "/v1/orders", {
            apiKey,
            json: { amount: "3", chain: "TRC20", currency: "USDT" }
          })).body
        )
        const id = String(created.order_id)
        // the TRON indexer lags: the newest block it has read was made before expire_at. Stored before the
        // order's time is moved back: the app's own expiry tick, running meanwhile, must find it too
        yield* sql`INSERT INTO indexed_blocks (chain, number, hash, parent_hash, block_time) VALUES ('TRC20', 900, 'h900', 'h899', now() - interval '5 minutes')`
        yield* sql`INSERT INTO indexer_cursors (chain, block_number, block_hash) VALUES ('TRC20', 900, 'h900')`
        yield* sql`UPDATE orders SET expire_at = now() - interval '1 minute' WHERE id = ${id}`
        yield* orders.expireDue(100)
        expect(asRecord((yield* client.request("GET", `/v1/orders/${id}`, { apiKey })).body).status).toBe("PENDING")
        // it reads on past expire_at: now the order's time is up
        yield* sql`INSERT INTO indexed_blocks (chain, number, hash, parent_hash, block_time) VALUES ('TRC20', 901, 'h901', 'h900', now())`
        yield* sql`UPDATE indexer_cursors SET block_number = 901, block_hash = 'h901' WHERE chain = 'TRC20'`
        yield* orders.expireDue(100)
        expect(asRecord((yield* client.request("GET", `/v1/orders/${id}`, { apiKey })).body).status).toBe("EXPIRED")
        yield* sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`
        yield* sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`
      })
    )
  })
})
