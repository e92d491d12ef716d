import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestAppLive } from "../test/http-harness.js"
import { merchantWithDepositAddresses } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import type { Attributed } from "./attribution.js"
import { AttributionStore, type BlockRecord } from "./attribution-store.js"
import { makeCatchUpWriter } from "./catch-up-writer.js"

const HOLDER = "catch-up-writer-test"
const block = (number: bigint): BlockRecord => ({
  chain: "TRC20",
  number,
  hash: `w${number}`,
  parentHash: `w${number - 1n}`,
  timestamp: 1_700_000_000
})

describe("catch-up writer", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.scoped(
      "never stores a cursor past a batch that did not commit, writing the batches again adds nothing, and what was pending is confirmed before batches go side by side",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const {
            addresses: [alice, bob],
            merchantId
          } = yield* merchantWithDepositAddresses(["alice", "bob"])
          const pay = (
            to: { address: string; walletId: string } | undefined,
            txHash: string,
            amount: string
          ): Attributed => ({
            transfer: {
              chain: "TRC20",
              currency: "USDT",
              txHash,
              eventIndex: 0,
              from: "TSender",
              to: to?.address ?? "",
              amount: 1n,
              blockNumber: 0n,
              blockHash: "",
              parentHash: "",
              success: true
            },
            wallet: { walletId: to?.walletId ?? "", merchantId, purpose: "deposit" },
            amount
          })
          yield* sql`INSERT INTO indexer_leases (chain, holder) VALUES ('TRC20', ${HOLDER}) ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder`
          const storedCursor = Effect.map(
            sql<{ n: string }>`SELECT block_number::text AS n FROM indexer_cursors WHERE chain = 'TRC20'`,
            ([row]) => row?.n
          )
          const deposits = Effect.map(
            sql<{
              tx_hash: string
            }>`SELECT tx_hash FROM transactions WHERE merchant_id = ${merchantId} AND status = 'confirmed' ORDER BY tx_hash`,
            (rows) => rows.map((r) => r.tx_hash)
          )

          // block 1000 written alone: the cursor's row and alice's balance row exist
          yield* store.writeBlock(block(1000n), [pay(alice, "tx-0", "1")], 1000n, HOLDER)
          const writer = yield* makeCatchUpWriter("TRC20", HOLDER, 2, { number: 1000n, hash: "w1000" })

          // another transaction holds alice's balance row: block 1001 (paying alice) waits for it while
          // block 1002 (paying bob) is written beside it and commits
          const locked = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const holder = yield* Effect.fork(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`SELECT 1 FROM ledger_balances WHERE account = ${`uncollected:${alice?.walletId ?? ""}`} FOR UPDATE`
                yield* Deferred.succeed(locked, undefined)
                yield* Deferred.await(release)
              })
            )
          )
          yield* Deferred.await(locked)
          yield* writer.write([{ block: block(1001n), hits: [pay(alice, "tx-1", "2")] }], 5000n)
          yield* writer.write([{ block: block(1002n), hits: [pay(bob, "tx-2", "4")] }], 5000n)
          yield* eventually(deposits, (txs) => txs.includes("tx-2"))
          expect(writer.pending).toBeGreaterThan(0)

          // block 1001's write fails (its statement cancelled, as a crash or an error would end it; the
          // statement's text as shown is cut at 1 kB, so it is found by its beginning)
          const [cancelled] = yield* sql<{ ok: boolean }>`
          SELECT pg_cancel_backend(pid) AS ok FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%WITH b AS%'`
          expect(cancelled?.ok).toBe(true)
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          const failure = yield* Effect.flip(writer.drain)
          expect(failure.message).toContain("Failed to execute statement")

          // block 1002 is written, but the cursor stays before 1001: a restart reads both again
          expect(yield* deposits).toEqual(["tx-0", "tx-2"])
          expect(yield* storedCursor).toBe("1000")

          // read again from the stored cursor: each transfer once, each credited once, each announced once
          const again = yield* makeCatchUpWriter("TRC20", HOLDER, 2, { number: 1000n, hash: "w1000" })
          yield* again.write([{ block: block(1001n), hits: [pay(alice, "tx-1", "2")] }], 5000n)
          yield* again.write([{ block: block(1002n), hits: [pay(bob, "tx-2", "4")] }], 5000n)
          yield* again.drain
          expect(yield* storedCursor).toBe("1002")
          expect(yield* deposits).toEqual(["tx-0", "tx-1", "tx-2"])
          const [ledger] = yield* sql<{ transfers: number; events: number; unbalanced: number; uncollected: string }>`
          SELECT (SELECT count(*)::int FROM ledger_transfers l JOIN transactions t ON t.id = l.reference WHERE t.merchant_id = ${merchantId}) AS transfers,
                 (SELECT count(*)::int FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed') AS events,
                 (SELECT count(*)::int FROM ledger_balances b WHERE b.merchant_id = ${merchantId} AND b.credits_posted <>
                   (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l WHERE l.credit_account = b.account AND l.chain = b.chain AND l.currency = b.currency)) AS unbalanced,
                 (SELECT trim_scale(uncollected)::text FROM merchant_balances WHERE merchant_id = ${merchantId}) AS uncollected`
          expect(ledger).toEqual({ transfers: 3, events: 3, unbalanced: 0, uncollected: "7" })

          // a batch not final yet waits for those before it and is written alone, with its own cursor
          yield* again.write([{ block: block(1003n), hits: [] }], 5000n)
          yield* again.write([{ block: block(1004n), hits: [pay(bob, "tx-4", "8")] }], 1003n)
          expect(again.pending).toBe(0)
          expect(yield* storedCursor).toBe("1004")
          const statusOf = (txHash: string) =>
            Effect.map(
              sql<{ status: string }>`SELECT status FROM transactions WHERE tx_hash = ${txHash}`,
              ([row]) => row?.status
            )
          expect(yield* statusOf("tx-4")).toBe("pending")

          // catching up again: the pending deposit, now final, is confirmed before batches go beside each other
          yield* again.write([{ block: block(1005n), hits: [pay(alice, "tx-5", "16")] }], 6000n)
          yield* again.write([{ block: block(1006n), hits: [] }], 6000n)
          yield* again.drain
          expect([yield* statusOf("tx-4"), yield* statusOf("tx-5"), yield* storedCursor]).toEqual([
            "confirmed",
            "confirmed",
            "1006"
          ])
        })
    )
  })
})
