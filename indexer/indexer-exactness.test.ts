import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Option, Ref } from "effect"
import type { ChainClient, NormalizedTransfer } from "../src/chains/chain-client.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { runChainIndexer } from "./chain-indexer.js"
import { IndexerStatus } from "../src/indexing/indexer-status.js"
import { MemoryChain } from "./memory-chain.js"

/**
 * The receive half made exact (issue: "no deposit ever missed"): each scenario here lost or wrongly
 * reversed a deposit before its fix.
 */
const options = {
  batchSize: 5,
  pollInterval: Duration.millis(20),
  retakeAfter: Duration.millis(300),
  startBlock: Option.some(0n),
  network: "devnet" as const
}

const depositAddress = Effect.gen(function* () {
  const client = yield* TestClient
  const { apiKey, merchantId } = yield* onboardMerchant()
  const res = yield* client.request("POST", "/v1/deposit-addresses", {
    apiKey,
    json: { external_user_id: "u1", chain: "TRC20", currency: "USDT" }
  })
  return { merchantId, address: String(asRecord(res.body).address) }
})

const usdt =
  (to: string, amount: bigint, txHash: string) =>
  (number: bigint, hash: string, parentHash: string): ReadonlyArray<NormalizedTransfer> => [
    {
      chain: "TRC20",
      currency: "USDT",
      txHash,
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

const deposits = (merchantId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{
        status: string
        block: string
      }>`SELECT status, block_number::text AS block FROM transactions WHERE merchant_id = ${merchantId} ORDER BY block_number`
  )

/**
 * Each test has the TRC20 chain to itself: no fence, cursor or blocks left from the one before, and no
 * status either (a test waiting for "cursor 6" found the one before's and went on before its own indexer
 * had read anything).
 */
const freshChain = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`DELETE FROM indexer_leases WHERE chain = 'TRC20'`,
    sql`DELETE FROM indexer_cursors WHERE chain = 'TRC20'`,
    sql`DELETE FROM indexed_blocks WHERE chain = 'TRC20'`,
    sql`DELETE FROM chain_identities WHERE chain = 'TRC20'`,
    Effect.flatMap(IndexerStatus, (status) =>
      Ref.update(status, (all) => new Map([...all].filter(([chain]) => chain !== "TRC20")))
    )
  ])
)

describe("the indexer never misses a deposit", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("an empty answer for a range does not move the cursor past blocks never written", () =>
      Effect.gen(function* () {
        yield* freshChain
        const { address, merchantId } = yield* depositAddress
        const chain = new MemoryChain("TRC20", 1)
        chain.append(() => [])
        chain.append(usdt(address, 1_000_000n, "tx-in-block-2"))
        for (let i = 0; i < 4; i++) chain.append(() => [])
        // a load-balanced node whose backend lags answers nothing, once, for blocks 1–5
        let lagging = true
        const inner = chain.client()
        const client: ChainClient = {
          ...inner,
          blocks: (from, to) => {
            if (lagging && from === 1n) {
              lagging = false
              return Effect.succeed([])
            }
            return inner.blocks(from, to)
          }
        }
        const fiber = yield* Effect.fork(runChainIndexer(client, options))
        const rows = yield* eventually(
          deposits(merchantId),
          (r) => r.length === 1 && r[0]?.status === "confirmed",
          10_000
        )
        expect(rows).toEqual([{ status: "confirmed", block: "2" }])
        yield* Fiber.interrupt(fiber)
      })
    )

    it.effect("a fork below a block already final halts the indexer; the final credit is never reversed", () =>
      Effect.gen(function* () {
        yield* freshChain
        const { address, merchantId } = yield* depositAddress
        const chain = new MemoryChain("TRC20", 2)
        for (let i = 0; i < 4; i++) chain.append(() => [])
        chain.append(usdt(address, 1_000_000n, "tx-in-block-5"))
        for (let i = 0; i < 5; i++) chain.append(() => [])
        // catching up: blocks 1–5 are written (block 5 final at once: the chain is at 10), then the node
        // forks from block 5 on before the indexer reads on
        const gate = yield* Deferred.make<void>()
        const inner = chain.client()
        const client: ChainClient = {
          ...inner,
          blocks: (from, to) =>
            from >= 6n ? Effect.zipRight(Deferred.await(gate), inner.blocks(from, to)) : inner.blocks(from, to)
        }
        const fiber = yield* Effect.fork(runChainIndexer(client, options))
        yield* eventually(deposits(merchantId), (r) => r[0]?.status === "confirmed", 10_000)
        chain.reorg(6)
        yield* Deferred.succeed(gate, undefined)
        const exit = yield* Fiber.await(fiber)
        expect(exit._tag).toBe("Failure")
        expect((yield* Ref.get(yield* IndexerStatus)).get("TRC20")).toMatchObject({
          state: "halted",
          detail: expect.stringMatching(/final/)
        })
        expect(yield* deposits(merchantId)).toEqual([{ status: "confirmed", block: "5" }])
      })
    )

    it.effect(
      "an indexer another took the chain from goes on, once the chain is its again, only from the stored cursor, never from what it had in memory",
      () =>
        Effect.gen(function* () {
          yield* freshChain
          const sql = yield* SqlClient.SqlClient
          const chain = new MemoryChain("TRC20", 1)
          for (let i = 0; i < 6; i++) chain.append(() => [])
          const reads: Array<bigint> = []
          const inner = chain.client()
          const client: ChainClient = {
            ...inner,
            blocks: (from, to) =>
              Effect.zipRight(
                Effect.sync(() => reads.push(from)),
                inner.blocks(from, to)
              )
          }
          const fiber = yield* Effect.fork(runChainIndexer(client, { ...options, pollInterval: Duration.millis(300) }))
          yield* eventually(Effect.flatMap(IndexerStatus, Ref.get), (m) => m.get("TRC20")?.cursor === "6", 10_000)
          // meanwhile (this process paused) another holder took the chain over, moved the cursor back to 2, and went away
          yield* sql`UPDATE indexer_leases SET holder = 'elsewhere:1:x' WHERE chain = 'TRC20'`
          yield* sql`UPDATE indexer_cursors SET block_number = 2, block_hash = ${chain.blocks[2]?.hash ?? ""} WHERE chain = 'TRC20'`
          reads.length = 0
          // its next write is refused: it stands by, takes the chain back, and resumes from block 2
          yield* eventually(
            Effect.sync(() => reads),
            (r) => r.includes(3n),
            2_500
          )
          expect(reads).toContain(3n)
          const [fence] = yield* sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`
          expect(fence?.holder).toMatch(new RegExp(`:${process.pid}:`))
          yield* Fiber.interrupt(fiber)
        })
    )
  })
})
