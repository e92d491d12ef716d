import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"

describe("transaction search", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect(
      "finds a merchant's transactions by hash, address or order, with filters and paging, and only its own",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const other = yield* onboardMerchant()
          const insert = (id: string, merchant: string, hash: string, to: string, status: string, currency: string) =>
            sql`INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index, from_address, to_address, block_number)
              VALUES (${id}, ${merchant}, 'deposit', ${status}, 'TRC20', ${currency}, 1.5, ${hash}, 0, 'TFrom', ${to}, 10)`
          yield* insert("t1", merchantId, "hash-a", "TAddr1", "confirmed", "USDT")
          yield* insert("t2", merchantId, "hash-b", "TAddr2", "pending", "TRX")
          yield* insert("t3", other.merchantId, "hash-c", "TAddr1", "confirmed", "USDT")
          const search = (query: string) =>
            Effect.map(client.request("GET", `/v1/transactions${query}`, { apiKey }), (r) => ({
              status: r.status,
              body: asRecord(r.body)
            }))
          expect((yield* search("")).body.total).toBe(2)
          expect((yield* search("?q=hash-a")).body.items).toEqual([
            expect.objectContaining({ id: "t1", amount: "1.5", type: "deposit" })
          ])
          expect((yield* search("?q=TAddr1")).body.total).toBe(1)
          expect((yield* search("?q=hash-c")).body.total).toBe(0)
          expect((yield* search("?status=pending&currency=trx")).body.total).toBe(1)
          expect((yield* search("?limit=1&offset=1")).body).toMatchObject({ total: 2, limit: 1, offset: 1 })
          for (const bad of ["?status=done", "?type=gift", "?limit=0", "?limit=101", "?offset=-1", "?chain=ETH"]) {
            expect((yield* search(bad)).status, bad).toBe(400)
          }
          expect((yield* client.request("GET", "/v1/transactions")).status).toBe(401)
        })
    )
  })
})
