import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Option, Ref } from "effect"
import type { ChainClient, NormalizedTransfer } from "../src/chains/chain-client.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { runChainIndexer } from "./chain-indexer.js"
import { MemoryChain } from "./memory-chain.js"

/**
 * Catching up against a remote node, the indexer keeps several batches asked ahead of the one it writes
 * (FACET_INDEXER_PREFETCH): what it reads is still written in order, and batches read from a branch the
 * chain has left by the time they are written are caught by the parent-hash chain like any reorg.
 */
const options = {
  batchSize: 5,
  pollInterval: Duration.millis(20),
  retakeAfter: Duration.millis(300),
  startBlock: Option.some(0n),
  network: "devnet" as const
}

/**
 * Each test has a chain of its own (a reorg walks back over every deposit of its chain: one test's final
 * deposits would halt the next one's rollback).
 */
type TestChain = "TRC20" | "BEP20"

const depositAddress = (chain: TestChain) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const { apiKey, merchantId } = yield* onboardMerchant()
    const res = yield* client.request("POST", "/v1/deposit-addresses", {
      apiKey,
      json: { external_user_id: "u1", chain, currency: "USDT" }
    })
    return { merchantId, address: String(asRecord(res.body).address) }
  })

const usdt =
  (chain: TestChain, to: string, amount: bigint, txHash: string) =>
  (number: bigint, hash: string, parentHash: string): ReadonlyArray<NormalizedTransfer> => [
    {
      chain,
      currency: "USDT",
      txHash,
      eventIndex: 0,
      from: "0x00000000000000000000000000000000000000c5",
      to,
      amount,
      blockNumber: number,
      blockHash: hash,
      parentHash,
      success: true
    }
  ]

const deposits = (merchantId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ tx: string; status: string; block: string }>`
      SELECT tx_hash AS tx, status, block_number::text AS block FROM transactions WHERE merchant_id = ${merchantId} ORDER BY tx_hash`
  )

const cursor = (chain: TestChain) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: string }>`SELECT block_number::text AS n FROM indexer_cursors WHERE chain = ${chain}`, (rows) =>
      Number(rows[0]?.n ?? -1)
    )
  )

/** No fence, cursor or blocks left on the chain from a run before. */
const freshChain = (chain: TestChain) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all([
      sql`DELETE FROM indexer_leases WHERE chain = ${chain}`,
      sql`DELETE FROM indexer_cursors WHERE chain = ${chain}`,
      sql`DELETE FROM indexed_blocks WHERE chain = ${chain}`,
      sql`DELETE FROM chain_identities WHERE chain = ${chain}`
    ])
  )

/** A node that answers each range after `ms`, counting the ranges it is asked at once. */
const slowNode = (inner: ChainClient, ms: number) =>
  Effect.gen(function* () {
    const inFlight = yield* Ref.make(0)
    const most = yield* Ref.make(0)
    const client: ChainClient = {
      ...inner,
      blocks: (from, to) =>
        Effect.acquireUseRelease(
          Effect.tap(
            Ref.updateAndGet(inFlight, (n) => n + 1),
            (n) => Ref.update(most, (m) => Math.max(m, n))
          ),
          () => Effect.delay(inner.blocks(from, to), Duration.millis(ms)),
          () => Ref.update(inFlight, (n) => n - 1)
        )
    }
    return { client, most: Ref.get(most) }
  })

describe("the indexer reads ahead while it writes", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("against a slow node several batches are in flight at once, and blocks are still written in order", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const prefetchBatches of [3, 0]) {
          yield* freshChain("TRC20")
          const { address, merchantId } = yield* depositAddress("TRC20")
          const chain = new MemoryChain("TRC20", 1)
          for (let i = 1; i <= 60; i++)
            chain.append(i === 57 ? usdt("TRC20", address, 1_000_000n, `tx-57-${prefetchBatches}`) : () => [])
          const node = yield* slowNode(chain.client(), 30)
          const fiber = yield* Effect.fork(runChainIndexer(node.client, { ...options, prefetchBatches }))
          expect(yield* eventually(cursor("TRC20"), (n) => n === 60, 20_000)).toBe(60)
          yield* Fiber.interrupt(fiber)
          // the batch being written and up to `prefetchBatches` more were asked at once (how many overlap
          // depends on how long writes take against the slow node: on a busy machine, fewer)
          const most = yield* node.most
          if (prefetchBatches === 0) expect(most).toBe(1)
          else expect([most > 1, most <= prefetchBatches + 1]).toEqual([true, true])
          expect(yield* deposits(merchantId)).toEqual([
            { tx: `tx-57-${prefetchBatches}`, status: "confirmed", block: "57" }
          ])
          // every stored block extends the one below it: nothing was written out of order
          const stored = yield* sql<{ n: string; hash: string; parent_hash: string }>`
            SELECT number::text AS n, hash, parent_hash FROM indexed_blocks WHERE chain = 'TRC20' ORDER BY number`
          expect(stored.map((b) => Number(b.n))).toEqual(Array.from({ length: 61 }, (_, i) => i))
          for (let i = 1; i < stored.length; i++) expect(stored[i]?.parent_hash).toBe(stored[i - 1]?.hash)
        }
      })
    )

    it.effect(
      "batches read ahead from a branch the chain then left are rolled back by the parent-hash chain; the new branch is credited once",
      () =>
        Effect.gen(function* () {
          yield* freshChain("BEP20")
          const { address, merchantId } = yield* depositAddress("BEP20")
          // nothing final: the branch left holds only pending deposits, which a reorg may reverse
          const chain = new MemoryChain("BEP20", 100)
          for (let i = 1; i <= 20; i++)
            chain.append(i === 12 ? usdt("BEP20", address, 10n ** 18n, "tx-left-branch") : () => [])
          // ranges from block 11 on are read at once but answered only when the gate opens
          const gate = yield* Deferred.make<void>()
          const read = yield* Ref.make(0)
          const inner = chain.client()
          const client: ChainClient = {
            ...inner,
            blocks: (from, to) =>
              Effect.flatMap(inner.blocks(from, to), (answer) =>
                Effect.zipRight(
                  Ref.update(read, (n) => n + 1),
                  from >= 11n ? Effect.as(Deferred.await(gate), answer) : Effect.succeed(answer)
                )
              )
          }
          const fiber = yield* Effect.fork(runChainIndexer(client, { ...options, prefetchBatches: 3 }))
          yield* eventually(Effect.zip(cursor("BEP20"), Ref.get(read)), ([n, r]) => n === 10 && r >= 4, 10_000)
          // 11–15 and 16–20 were read from this branch; the chain now leaves it from block 9 on
          chain.reorg(12)
          chain.append(usdt("BEP20", address, 2n * 10n ** 18n, "tx-new-branch"))
          yield* Deferred.succeed(gate, undefined)
          const rows = yield* eventually(
            deposits(merchantId),
            (r) => r.length === 2 && r.some((t) => t.tx === "tx-left-branch" && t.status === "reversed"),
            15_000
          )
          expect(rows).toEqual([
            { tx: "tx-left-branch", status: "reversed", block: "12" },
            { tx: "tx-new-branch", status: "pending", block: "21" }
          ])
          expect(yield* eventually(cursor("BEP20"), (n) => n === 21, 10_000)).toBe(21)
          yield* Fiber.interrupt(fiber)
        })
    )
  })
})
