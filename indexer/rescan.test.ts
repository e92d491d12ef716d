import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { makeSolanaClient } from "../src/chains/solana/solana-client.js"
import { TestAppLive } from "../test/http-harness.js"
import { startPrunedSolanaNode } from "../test/pruned-solana-node.js"
import { eventually } from "../test/webhook-receiver.js"
import { rescan } from "./rescan.js"

describe("a rescan", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    // through a node that no longer held the slots it answered `added 0`, as if it had read them (#32 item 5)
    it.effect(
      "never reports success over blocks it did not read: through a node without the old ledger it fails naming the slots; through one that holds them it reads them",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const endpoints = yield* ChainEndpoints
            const cursor = yield* eventually(
              Effect.map(
                sql<{ block: string }>`SELECT block_number::text AS block FROM indexer_cursors WHERE chain = 'SOLANA'`,
                (rows) => BigInt(rows[0]?.block ?? "0")
              ),
              (n) => n > 40n,
              30_000
            )
            const tokens = new Map([...endpoints.solana.tokens])
            const from = cursor - 30n
            const to = cursor - 10n
            const pruned = yield* startPrunedSolanaNode(endpoints.solana.rpcUrl, () => Number(cursor - 20n))
            const failed = yield* Effect.flip(
              rescan(yield* makeSolanaClient({ rpcUrl: pruned.url, tokens }), from, to, 5)
            )
            expect(failed.message).toBe(
              `SOLANA rescan of ${from}–${to} stopped at block ${from} (0 transfers added before it): slots ${from}–${from + 4n} cannot be read from this node: its ledger starts at slot ${cursor - 20n} (getFirstAvailableBlock); a node that keeps them (an archive, or one with longer ledger retention) must read them`
            )
            const read = yield* rescan(
              yield* makeSolanaClient({ rpcUrl: endpoints.solana.rpcUrl, tokens }),
              from,
              to,
              5
            )
            expect(read).toMatchObject({ chain: "SOLANA", from, to, added: 0 })
          })
        )
    )
  })
})
