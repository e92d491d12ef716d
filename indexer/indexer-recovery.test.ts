import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Option, Ref } from "effect"
import { type ChainClient, ChainRpcError, type NormalizedTransfer } from "../src/chains/chain-client.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { merchantWithDepositAddresses } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { AttributionStore } from "./attribution-store.js"
import { runChainIndexer } from "./chain-indexer.js"
import { IndexerStatus } from "../src/indexing/indexer-status.js"
import { MemoryChain } from "./memory-chain.js"

const options = {
  batchSize: 5,
  pollInterval: Duration.millis(20),
  retakeAfter: Duration.millis(300),
  startBlock: Option.some(0n),
  network: "devnet" as const
}

const depositAddresses = (count: number) =>
  Effect.map(
    merchantWithDepositAddresses(Array.from({ length: count }, (_, i) => `u${i}`)),
    ({ addresses, merchantId }) => ({
      merchantId,
      addresses: addresses.map((a) => a.address)
    })
  )

const usdt =
  (to: string, amount: bigint, index: number) =>
  (number: bigint, hash: string, parentHash: string): ReadonlyArray<NormalizedTransfer> => [
    {
      chain: "TRC20",
      currency: "USDT",
      txHash: `tx-${number}-${index}`,
      eventIndex: 0,
      from: "TCustomer",
      to,
      amount,
      blockNumber: number,
      blockHash: hash,
      parentHash,
      success: true
    }
  ]

const counts = (merchantId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ txs: string; confirmed: string; entries: string; events: string; balance: string | null }>`
      SELECT (SELECT count(*) FROM transactions WHERE merchant_id = ${merchantId}) AS txs,
             (SELECT count(*) FROM transactions WHERE merchant_id = ${merchantId} AND status = 'confirmed') AS confirmed,
             (SELECT count(*) FROM ledger_transfers l JOIN transactions t ON t.id = l.reference WHERE t.merchant_id = ${merchantId}) AS entries,
             (SELECT count(*) FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed') AS events,
             (SELECT uncollected::text FROM merchant_balances WHERE merchant_id = ${merchantId}) AS balance`,
      (rows) => rows[0]
    )
  )

describe("indexer recovery", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("killed mid-block and restarted, it loses nothing and writes nothing twice", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { addresses, merchantId } = yield* depositAddresses(3)
        const chain = new MemoryChain("TRC20", 2)
        for (const [i, address] of addresses.entries()) chain.append(usdt(address, BigInt(i + 1) * 1_000_000n, i))
        for (let i = 0; i < 4; i++) chain.append(() => [])
        // every confirmation fails: the block's transaction rolls back with its cursor, again and again
        yield* sql`CREATE OR REPLACE FUNCTION fail_posting() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected crash'; END $$ LANGUAGE plpgsql`
        yield* sql`CREATE TRIGGER fail_posting BEFORE INSERT ON ledger_transfers FOR EACH ROW EXECUTE FUNCTION fail_posting()`
        const first = yield* Effect.fork(runChainIndexer(chain.client(), options))
        const status = yield* IndexerStatus
        yield* eventually(Ref.get(status), (m) => m.get("TRC20")?.state === "retrying", 10_000)
        expect((yield* counts(merchantId))?.entries).toBe("0")
        yield* Fiber.interrupt(first)
        yield* sql`DROP TRIGGER fail_posting ON ledger_transfers`

        const second = yield* Effect.fork(runChainIndexer(chain.client(), options))
        const done = yield* eventually(counts(merchantId), (c) => c?.confirmed === "3", 10_000)
        expect(done).toEqual({ txs: "3", confirmed: "3", entries: "3", events: "3", balance: "6" })
        // running over the same blocks again changes nothing
        yield* sql`UPDATE indexer_cursors SET block_number = 0 WHERE chain = 'TRC20'`
        yield* Effect.sleep("300 millis")
        expect(yield* counts(merchantId)).toEqual(done)
        yield* Fiber.interrupt(second)
        yield* sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`
        yield* sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`
      })
    )

    it.effect(
      "an indexer started on a chain takes it over: a write of the one it replaced still in flight ends first, and that one can write nothing after",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const { addresses, merchantId } = yield* depositAddresses(2)
          const chain = new MemoryChain("TRC20", 1)
          chain.append(usdt(addresses[0] ?? "", 1_000_000n, 0))
          chain.append(() => [])
          // A would take the chain back only after a minute: within this test it stays replaced
          const a = yield* Effect.fork(
            runChainIndexer(chain.client(), { ...options, retakeAfter: Duration.minutes(1) })
          )
          yield* eventually(counts(merchantId), (c) => c?.confirmed === "1", 10_000)
          const [holderA] = yield* sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`
          const staleHolder = holderA?.holder ?? ""

          // a write transaction of A in flight (it has read the fence FOR SHARE, as each of A's writes does)
          const commit = yield* Deferred.make<void>()
          const fenceRead = yield* Deferred.make<void>()
          const inFlight = yield* Effect.fork(
            sql.withTransaction(
              Effect.zipRight(
                sql`SELECT holder FROM indexer_leases WHERE chain = 'TRC20' AND holder = ${staleHolder} FOR SHARE`,
                Effect.zipRight(Deferred.succeed(fenceRead, undefined), Deferred.await(commit))
              )
            )
          )
          // B starts only once A's write holds the fence (a fork runs when it gets to: on a busy machine B
          // could otherwise take the fence before A's write had read it)
          yield* Deferred.await(fenceRead)
          const b = yield* Effect.fork(runChainIndexer(chain.client(), options))
          yield* Effect.sleep("400 millis")
          const [during] = yield* sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`
          expect(during?.holder).toBe(staleHolder)
          yield* Deferred.succeed(commit, undefined)
          yield* Fiber.join(inFlight)
          const [taken] = yield* eventually(
            sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`,
            (rows) => rows[0]?.holder !== staleHolder,
            10_000
          )
          expect(taken?.holder).not.toBe(staleHolder)

          // the stale holder's write transaction is refused, and writes nothing
          const refused = yield* Effect.flip(
            store.writeBlock(
              { chain: "TRC20", number: 99n, hash: "stale", parentHash: "x", timestamp: 0 },
              [],
              0n,
              staleHolder
            )
          )
          expect(refused._tag).toBe("LeaseLost")
          expect(yield* sql`SELECT 1 FROM indexed_blocks WHERE chain = 'TRC20' AND number = 99`).toEqual([])
          expect(yield* Effect.flip(store.confirm("TRC20", 0n, 0n, staleHolder))).toMatchObject({ _tag: "LeaseLost" })

          // B indexes on alone; A stands by
          chain.append(usdt(addresses[1] ?? "", 2_000_000n, 1))
          chain.append(() => [])
          yield* eventually(counts(merchantId), (c) => c?.confirmed === "2", 10_000)
          const [still] = yield* sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`
          expect(still?.holder).toBe(taken?.holder)
          expect((yield* Ref.get(yield* IndexerStatus)).get("TRC20")?.state).not.toBe("halted")
          yield* Fiber.interrupt(a)
          yield* Fiber.interrupt(b)
          yield* sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`
          yield* sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`
        })
    )

    // (before the next test: it leaves a deposit final at block 5, which a rollback to 3 here would reach)
    // One URL, two nodes behind it: one still on a branch the chain left, one ahead. Before, the head came
    // from one and the final height from the other, and a deposit on the branch was confirmed — credited
    // and announced — then reversed below the final height (a halt). Now the head and final height come from
    // one node, and the block at the final height must be the one indexed before anything is final.
    it.effect(
      "behind a load balancer, a branch's deposit is never confirmed by another node's final height; it is reversed when the nodes agree",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { addresses, merchantId } = yield* depositAddresses(1)
          const address = addresses[0] ?? ""
          const ahead = new MemoryChain("TRC20", 2)
          for (let i = 0; i < 3; i++) ahead.append(() => [])
          ahead.append(usdt(address, 5_000_000n, 9))
          // the lagging node keeps block 4 with the deposit; the chain replaces it and grows to 10 (final 8)
          const lagging = new MemoryChain("TRC20", 2)
          lagging.blocks.splice(0, lagging.blocks.length, ...ahead.blocks)
          ahead.reorg(1)
          for (let i = 0; i < 6; i++) ahead.append(() => [])
          const [slow, fast] = [lagging.client(), ahead.client()]
          let mode: "lagging" | "round-robin" | "ahead" = "lagging"
          let calls = 0
          const pick = () => (mode === "lagging" ? slow : mode === "ahead" ? fast : calls++ % 2 === 0 ? slow : fast)
          const balanced: ChainClient = {
            ...fast,
            head: Effect.suspend(() => pick().head),
            finalized: Effect.suspend(() => pick().finalized),
            tip: Effect.suspend(() => pick().tip),
            blocks: (from, to) => Effect.suspend(() => pick().blocks(from, to)),
            blockHash: (number) => Effect.suspend(() => pick().blockHash(number))
          }
          const fiber = yield* Effect.fork(runChainIndexer(balanced, options))
          yield* eventually(counts(merchantId), (c) => c?.txs === "1", 10_000)
          mode = "round-robin"
          for (let i = 0; i < 20; i++) {
            yield* Effect.sleep("100 millis")
            const now = yield* counts(merchantId)
            expect([now?.confirmed, now?.events]).toEqual(["0", "0"])
          }
          mode = "ahead"
          yield* eventually(
            sql<{ status: string }>`SELECT status FROM transactions WHERE merchant_id = ${merchantId}`,
            (rows) => rows.length === 1 && rows[0]?.status === "reversed",
            10_000
          )
          expect(yield* counts(merchantId)).toMatchObject({ confirmed: "0", events: "0", entries: "0" })
          expect((yield* Ref.get(yield* IndexerStatus)).get("TRC20")?.state).not.toBe("halted")
          yield* Fiber.interrupt(fiber)
          yield* sql`DELETE FROM indexer_leases WHERE chain = 'TRC20'`
          yield* sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`
          yield* sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`
        })
    )

    it.effect(
      "a branch the indexer followed, left by the chain while a failing node kept the indexer from reading, is rolled back even below the final height when no final credit is on it",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { addresses, merchantId } = yield* depositAddresses(1)
          const address = addresses[0] ?? ""
          const chain = new MemoryChain("TRC20", 2)
          for (let i = 0; i < 3; i++) chain.append(() => [])
          // block 4 carries a deposit on a branch the chain will leave; at the head, it is still pending
          chain.append(usdt(address, 5_000_000n, 7))
          let failing = false
          const memory = chain.client()
          const client = {
            ...memory,
            blocks: (from: bigint, to: bigint) =>
              failing
                ? Effect.fail(new ChainRpcError({ chain: "TRC20", message: "node down" }))
                : memory.blocks(from, to)
          }
          const fiber = yield* Effect.fork(runChainIndexer(client, options))
          yield* eventually(counts(merchantId), (c) => c?.txs === "1", 10_000)
          // the node fails; meanwhile the chain leaves block 4 and grows past its final height
          failing = true
          yield* Effect.sleep("100 millis")
          chain.reorg(1)
          chain.append(usdt(address, 6_000_000n, 8))
          for (let i = 0; i < 5; i++) chain.append(() => [])
          failing = false
          // block 4 is below the final height (8) and not what was indexed: left, not a halt; the real deposit is credited
          const rows = yield* eventually(
            sql<{
              tx_hash: string
              status: string
            }>`SELECT tx_hash, status FROM transactions WHERE merchant_id = ${merchantId} ORDER BY tx_hash`,
            (r) => r.some((t) => t.tx_hash === "tx-5-8" && t.status === "confirmed"),
            15_000
          )
          expect(rows).toEqual([
            { tx_hash: "tx-4-7", status: "reversed" },
            { tx_hash: "tx-5-8", status: "confirmed" }
          ])
          expect((yield* Ref.get(yield* IndexerStatus)).get("TRC20")?.state).not.toBe("halted")
          expect((yield* counts(merchantId))?.balance).toBe("6")
          yield* Fiber.interrupt(fiber)
          yield* sql`DELETE FROM indexer_leases WHERE chain = 'TRC20'`
          yield* sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`
          yield* sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`
        })
    )

    it.effect("a fork deeper than the finality window halts the chain's indexer instead of guessing", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { addresses, merchantId } = yield* depositAddresses(1)
        const chain = new MemoryChain("TRC20", 2)
        chain.append(usdt(addresses[0] ?? "", 1_000_000n, 0))
        for (let i = 0; i < 5; i++) chain.append(() => [])
        const fiber = yield* Effect.fork(runChainIndexer(chain.client(), options))
        yield* eventually(counts(merchantId), (c) => c?.confirmed === "1", 10_000)
        yield* eventually(Effect.flatMap(IndexerStatus, Ref.get), (m) => m.get("TRC20")?.cursor === "6", 10_000)
        chain.reorg(6)
        chain.append(() => [])
        const exit = yield* Fiber.await(fiber)
        expect(exit._tag).toBe("Failure")
        const status = (yield* Ref.get(yield* IndexerStatus)).get("TRC20")
        expect(status?.state).toBe("halted")
        expect(status?.detail).toMatch(/deeper than the finality window/)
        // nothing was rolled back on a guess
        expect((yield* counts(merchantId))?.confirmed).toBe("1")
        // and the service says so: health is degraded (503) with the reason, metrics carry the state
        const client = yield* TestClient
        const health = yield* client.request("GET", "/health")
        expect(health.status).toBe(503)
        expect(health.body).toMatchObject({
          status: "degraded",
          reasons: [expect.stringMatching(/^TRC20 indexer halted: .*deeper than the finality window/)]
        })
        expect(String(asRecord(health.body).error)).toMatch(/degraded/)
        const metrics = yield* client.request("GET", "/metrics")
        expect(metrics.text).toContain(`facet_indexer_state{chain="TRC20",state="halted"} 1`)
        expect(metrics.text).toContain(`facet_indexer_up{chain="TRC20",state="halted"} 0`)
        yield* sql`DELETE FROM indexer_leases WHERE chain = 'TRC20'`
      })
    )

    it.effect("a node of another chain (another genesis) halts the indexer before it reads a block", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const before = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM indexed_blocks WHERE chain = 'TRC20'`
        const other = new MemoryChain("TRC20", 2, "another network")
        for (let i = 0; i < 3; i++) other.append(() => [])
        const exit = yield* Fiber.await(yield* Effect.fork(runChainIndexer(other.client(), options)))
        expect(exit._tag).toBe("Failure")
        const status = (yield* Ref.get(yield* IndexerStatus)).get("TRC20")
        expect(status).toMatchObject({
          state: "halted",
          detail: expect.stringMatching(
            /^TRC20: the node's chain \(genesis \w+, devnet\) is not the one this database indexed/
          )
        })
        expect(yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM indexed_blocks WHERE chain = 'TRC20'`).toEqual(
          before
        )
        yield* sql`DELETE FROM indexer_leases WHERE chain = 'TRC20'`
      })
    )
  })
})
