import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { isEvmAddress, isSolanaAddress, tronAccountId } from "../src/keys/address-encoding.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"

const post = (path: string, apiKey: string, json: unknown) =>
  Effect.flatMap(TestClient, (client) => client.request("POST", path, { apiKey, json }))

const itemsOf = (body: unknown) => {
  const items = asRecord(body).items
  return Array.isArray(items) ? items.map(asRecord) : []
}

describe("deposit addresses", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("assigns one address per user, chain and currency, idempotently, shared across a network's assets", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const first = yield* post("/v1/deposit-addresses", apiKey, {
          external_user_id: "user-1",
          chain: "TRC20",
          currency: "USDT",
          label: "main"
        })
        expect(first.status).toBe(201)
        const a = asRecord(first.body)
        expect(a).toMatchObject({
          external_user_id: "user-1",
          chain: "TRC20",
          currency: "USDT",
          status: "active",
          label: "main",
          shared_network_address: true,
          balance: "0",
          available_balance: "0"
        })
        expect(tronAccountId(String(a.address))).toBeDefined()
        expect(a.network_account_id).toBe(a.wallet_id)

        const repeat = yield* post("/v1/deposit-addresses", apiKey, {
          external_user_id: "user-1",
          chain: "TRC20",
          currency: "usdt"
        })
        expect(repeat.status).toBe(201)
        expect(asRecord(repeat.body).id).toBe(a.id)

        const trx = asRecord(
          (yield* post("/v1/deposit-addresses", apiKey, {
            external_user_id: "user-1",
            chain: "TRC20",
            currency: "TRX"
          })).body
        )
        expect(trx.id).not.toBe(a.id)
        expect(trx.address).toBe(a.address)
        expect(trx.network_account_id).toBe(a.network_account_id)

        const bep = asRecord(
          (yield* post("/v1/deposit-addresses", apiKey, {
            external_user_id: "user-1",
            chain: "BEP20",
            currency: "USDT"
          })).body
        )
        expect(isEvmAddress(String(bep.address))).toBe(true)
        const sol = asRecord(
          (yield* post("/v1/deposit-addresses", apiKey, {
            external_user_id: "user-1",
            chain: "SOLANA",
            currency: "SOL"
          })).body
        )
        expect(isSolanaAddress(String(sol.address))).toBe(true)
        const other = asRecord(
          (yield* post("/v1/deposit-addresses", apiKey, {
            external_user_id: "user-2",
            chain: "TRC20",
            currency: "USDT"
          })).body
        )
        expect(other.address).not.toBe(a.address)
      })
    )

    it.effect("refuses assets that take no deposits for this merchant and malformed requests", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        const cases: ReadonlyArray<[unknown, RegExp]> = [
          [{ external_user_id: "u", chain: "POLYGON", currency: "USDT" }, /sunset/],
          [{ external_user_id: "u", chain: "BEP20", currency: "VELNX" }, /not enabled/],
          [{ external_user_id: "u", chain: "BEP20", currency: "DOGE" }, /not a supported asset/],
          [{ external_user_id: "", chain: "TRC20", currency: "USDT" }, /external_user_id/],
          [{ external_user_id: "u", chain: "TRC20", currency: "USDT", extra: true }, /extra/],
          [{ chain: "TRC20", currency: "USDT" }, /external_user_id/]
        ]
        for (const [json, message] of cases) {
          const res = yield* post("/v1/deposit-addresses", apiKey, json)
          expect(res.status, JSON.stringify(json)).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
        // enrolling the custom asset makes it assignable
        yield* post("/v1/wallet-asset-enrollments", apiKey, { chain: "BEP20", currency: "VELNX" })
        expect(
          (yield* post("/v1/deposit-addresses", apiKey, { external_user_id: "u", chain: "BEP20", currency: "VELNX" }))
            .status
        ).toBe(201)
      })
    )

    it.effect("assigns once when the same user is requested concurrently", () =>
      Effect.gen(function* () {
        const { apiKey, merchantId } = yield* onboardMerchant()
        const results = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) =>
            post("/v1/deposit-addresses", apiKey, {
              external_user_id: "racer",
              chain: "BEP20",
              currency: i % 2 === 0 ? "USDT" : "BNB"
            })
          ),
          { concurrency: "unbounded" }
        )
        expect(results.every((r) => r.status === 201)).toBe(true)
        expect(new Set(results.map((r) => asRecord(r.body).address)).size).toBe(1)
        const sql = yield* SqlClient.SqlClient
        const [wallets] = yield* sql<{
          n: string
        }>`SELECT count(*) AS n FROM wallets WHERE merchant_id = ${merchantId} AND purpose = 'deposit'`
        expect(wallets?.n).toBe("1")
        const [rows] = yield* sql<{
          n: string
        }>`SELECT count(*) AS n FROM deposit_addresses WHERE merchant_id = ${merchantId}`
        expect(rows?.n).toBe("2")
      })
    )

    it.effect("assigns a batch of 1000 users in one call", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const { apiKey } = yield* onboardMerchant()
        const ids = Array.from({ length: 1000 }, (_, i) => `bulk-${i}`)
        const started = Date.now()
        const res = yield* post("/v1/deposit-addresses/batch", apiKey, {
          external_user_ids: ids,
          chain: "TRC20",
          currency: "USDT",
          label_prefix: "vip-"
        })
        const elapsed = Date.now() - started
        yield* Effect.logWarning(`batch of 1000 deposit addresses took ${elapsed} ms`)
        expect(res.status).toBe(200)
        expect(asRecord(res.body)).toMatchObject({ total: 1000, succeeded: 1000, failed: 0 })
        const items = itemsOf(res.body)
        expect(new Set(items.map((i) => asRecord(i.deposit_address).address)).size).toBe(1000)
        expect(items.every((i) => i.status === "created")).toBe(true)
        expect(asRecord(items[7]?.deposit_address).label).toBe("vip-bulk-7")
        // repeating it creates nothing new
        const again = yield* post("/v1/deposit-addresses/batch", apiKey, {
          external_user_ids: ids.slice(0, 10),
          chain: "TRC20",
          currency: "USDT"
        })
        expect(itemsOf(again.body).every((i) => i.status === "existing")).toBe(true)
        const list = asRecord((yield* client.request("GET", "/v1/deposit-addresses?limit=1", { apiKey })).body)
        expect(list.total).toBe(1000)
      })
    )

    it.effect("batch: all-or-nothing by default, per-item results with continue_on_error, shapes checked", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const { apiKey } = yield* onboardMerchant()
        const items = [
          { external_user_id: "b-1", chain: "TRC20", currency: "USDT" },
          { external_user_id: "b-2", chain: "POLYGON", currency: "USDT" },
          { external_user_id: "b-3", chain: "BEP20", currency: "BNB" }
        ]
        const strict = yield* post("/v1/deposit-addresses/batch", apiKey, { items })
        expect(strict.status).toBe(400)
        expect(asRecord(strict.body).error).toMatch(/nothing was created: items\[1\]/)
        expect(asRecord((yield* client.request("GET", "/v1/deposit-addresses", { apiKey })).body).total).toBe(0)

        const lenient = yield* post("/v1/deposit-addresses/batch", apiKey, { items, continue_on_error: true })
        expect(lenient.status).toBe(200)
        expect(asRecord(lenient.body)).toMatchObject({ total: 3, succeeded: 2, failed: 1 })
        expect(itemsOf(lenient.body).map((i) => i.status)).toEqual(["created", "failed", "created"])
        expect(String(itemsOf(lenient.body)[1]?.error)).toMatch(/sunset/)

        const shapes: ReadonlyArray<[unknown, RegExp]> = [
          [{}, /either items, or external_user_ids/],
          [{ items, external_user_ids: ["x"], chain: "TRC20", currency: "USDT" }, /not both/],
          [{ external_user_ids: ["x"] }, /needs chain and currency/],
          [{ items, chain: "TRC20" }, /inside each item/],
          [{ items: [] }, /empty/],
          [
            { external_user_ids: Array.from({ length: 1001 }, (_, i) => `u${i}`), chain: "TRC20", currency: "USDT" },
            /at most 1000/
          ],
          [{ items, unknown_field: 1 }, /unknown_field/]
        ]
        for (const [json, message] of shapes) {
          const res = yield* post("/v1/deposit-addresses/batch", apiKey, json)
          expect(res.status, JSON.stringify(json).slice(0, 80)).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
      })
    )

    it.effect("lists with filters and paging, and shows a deposit address's transactions", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const { apiKey, merchantId } = yield* onboardMerchant()
        for (const user of ["l-1", "l-2", "l-3"]) {
          yield* post("/v1/deposit-addresses", apiKey, { external_user_id: user, chain: "TRC20", currency: "USDT" })
        }
        const bnb = asRecord(
          (yield* post("/v1/deposit-addresses", apiKey, { external_user_id: "l-1", chain: "BEP20", currency: "BNB" }))
            .body
        )
        const all = asRecord((yield* client.request("GET", "/v1/deposit-addresses?limit=2&offset=1", { apiKey })).body)
        expect(all).toMatchObject({ total: 4, limit: 2, offset: 1 })
        expect(itemsOf(all)).toHaveLength(2)
        expect(
          asRecord((yield* client.request("GET", "/v1/deposit-addresses?external_user_id=l-1", { apiKey })).body).total
        ).toBe(2)
        expect(
          asRecord((yield* client.request("GET", "/v1/deposit-addresses?chain=BEP20&currency=bnb", { apiKey })).body)
            .total
        ).toBe(1)
        for (const q of ["limit=0", "limit=101", "offset=-1", "chain=ETH"]) {
          expect((yield* client.request("GET", `/v1/deposit-addresses?${q}`, { apiKey })).status, q).toBe(400)
        }

        const path = `/v1/deposit-addresses/${String(bnb.id)}/transactions`
        const empty = yield* client.request("GET", path, { apiKey })
        expect(empty.status).toBe(200)
        expect(asRecord(empty.body)).toMatchObject({ total: 0, items: [] })
        yield* sql`INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index, from_address,
                    to_address, block_number, confirmations, wallet_id, deposit_address_id)
                   VALUES ('tx_test_1', ${merchantId}, 'deposit', 'confirmed', 'BEP20', 'BNB', 1.25, '0xabc', 0, '0xfrom',
                    ${String(bnb.address)}, 1234, 15, ${String(bnb.wallet_id)}, ${String(bnb.id)})`
        const one = asRecord((yield* client.request("GET", path, { apiKey })).body)
        expect(one.total).toBe(1)
        expect(itemsOf(one)[0]).toMatchObject({
          id: "tx_test_1",
          type: "deposit",
          amount: "1.25",
          block_number: 1234,
          status: "confirmed"
        })
        const listed = itemsOf(
          asRecord((yield* client.request("GET", "/v1/deposit-addresses?chain=BEP20", { apiKey })).body)
        )
        expect(listed[0]?.balance).toBe("1.25")

        const other = yield* onboardMerchant()
        expect((yield* client.request("GET", path, { apiKey: other.apiKey })).status).toBe(404)
        expect((yield* client.request("GET", "/v1/deposit-addresses/dep_nope/transactions", { apiKey })).status).toBe(
          404
        )
        expect((yield* client.request("GET", `${path}?limit=500`, { apiKey })).status).toBe(400)
      })
    )
  })
})
