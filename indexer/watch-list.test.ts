import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { WalletStore } from "../src/stores/wallet-store.js"
import { TestDatabaseLive } from "../test/database.js"
import { WatchList } from "./watch-list.js"

describe("watch list", () => {
  layer(WalletStore.Default.pipe(Layer.provideMerge(TestDatabaseLive)), { excludeTestServices: true })((it) => {
    it.effect("pages through every wallet in sequence order (numerically: 9 before 10) and then follows new ones", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'checkout', '{}', 's')`
        const insert = (from: number, to: number) => sql`
          INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
          SELECT 'w' || g, 'm1', 'receive', 'deposit', 'BEP20', 'EVM', '0xAbC' || lpad(g::text, 37, '0'), 'p', 9, g
          FROM generate_series(${from}::int, ${to}::int) g`
        yield* insert(1, 25)
        const watch = new WatchList("BEP20", { pageSize: 4, bulkThreshold: 1_000_000 })
        expect(yield* watch.refresh).toBe(25)
        yield* insert(26, 31)
        expect(yield* watch.refresh).toBe(31)
        // EVM addresses match whatever their case
        expect(watch.lookup(`0xabc${"31".padStart(37, "0")}`)?.walletId).toBe("w31")
        expect(watch.lookup("0xnot-ours")).toBeUndefined()
      })
    )

    it.effect("a wallet whose transaction commits after a later-numbered one is still watched", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const watch = new WatchList("TRC20", { pageSize: 100 })
        yield* watch.refresh
        const wallet = (id: string, index: number) => sql`
          INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
          VALUES (${id}, 'm1', 'receive', 'deposit', 'TRC20', 'TRON', ${`T${id}`}, 'p', 9, ${index})`
        // merchant A's order takes number n and is still in its transaction when merchant B's address
        // (number n + 1) commits and the indexer refreshes
        const aInserted = yield* Deferred.make<void>()
        const aMayCommit = yield* Deferred.make<void>()
        const a = yield* Effect.fork(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* wallet("walletA", 1001)
              yield* Deferred.succeed(aInserted, undefined)
              yield* Deferred.await(aMayCommit)
            })
          )
        )
        yield* Deferred.await(aInserted)
        yield* wallet("walletB", 1002)
        const refreshing = yield* Effect.fork(watch.refresh)
        yield* Effect.sleep("200 millis")
        yield* Deferred.succeed(aMayCommit, undefined)
        yield* Fiber.join(a)
        yield* Fiber.join(refreshing)
        yield* watch.refresh
        expect([watch.lookup("TwalletA")?.walletId, watch.lookup("TwalletB")?.walletId]).toEqual(["walletA", "walletB"])
      })
    )

    it.effect(
      "a large backlog comes in one COPY: the same wallets, purposes and ids as the pages give, odd strings included",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`
          INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
          SELECT 'wal_' || lpad(g::text, 24, '0'), 'm1', 'receive', CASE WHEN g % 2 = 0 THEN 'order' ELSE 'deposit' END, 'SOLANA', 'SOLANA',
                 'So1' || lpad(g::text, 40, 'x'), 'p', 9, 5000 + g
          FROM generate_series(1, 3000) g`
          const odd = String.raw`odd\address	with a tab`
          yield* sql`
          INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
          VALUES ('w-odd', 'm1', 'receive', 'deposit', 'SOLANA', 'SOLANA', ${odd}, 'p', 9, 9999)`
          const bulk = new WatchList("SOLANA", { bulkThreshold: 0 })
          const paged = new WatchList("SOLANA", { pageSize: 500, bulkThreshold: 1_000_000 })
          expect(yield* bulk.refresh).toBe(3001)
          expect(yield* paged.refresh).toBe(3001)
          for (const g of [1, 2, 999, 3000]) {
            const address = `So1${String(g).padStart(40, "x")}`
            expect(bulk.lookup(address)).toEqual(paged.lookup(address))
            expect(bulk.lookup(address)).toEqual({
              walletId: `wal_${String(g).padStart(24, "0")}`,
              merchantId: "m1",
              purpose: g % 2 === 0 ? "order" : "deposit"
            })
          }
          expect(bulk.lookup(odd)?.walletId).toBe("w-odd")
          expect(bulk.lookup("So1")).toBeUndefined()
        })
    )
  })
})
