import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import { makeSolanaClient } from "../src/chains/solana/solana-client.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { startSolanaDevnet } from "../src/devnet/solana/solana-devnet.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { startPrunedSolanaNode } from "../test/pruned-solana-node.js"
import { runChainIndexer } from "./chain-indexer.js"
import { startBlockFor } from "./start-block.js"

const SignerLive = LocalSignerLive.pipe(
  Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow"))
)

describe("where a new chain's indexer starts", () => {
  layer(Layer.merge(TestAppLive(), SignerLive), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    // the indexer of a chain with no cursor started at the head: an address issued while its node refused the
    // indexer (a provider's ban at the very first start) and paid before the indexer could start was never
    // credited (the "real providers" scenario, #32)
    it.scoped(
      "addresses issued before it first ran: it starts before the oldest of them, and what was paid to them meanwhile is credited",
      () =>
        Effect.gen(function* () {
          const devnet = yield* startSolanaDevnet({ slotMs: 50, finalityLag: 4 })
          const { apiKey } = yield* onboardMerchant()
          const created = asRecord(
            (yield* (yield* TestClient).request("POST", "/v1/deposit-addresses", {
              apiKey,
              json: { external_user_id: "early-bird", chain: "SOLANA", currency: "USDT" }
            })).body
          )
          const address = String(created.address)
          const file = {
            bep20: { rpcUrl: "", chainId: 0, tokens: {} },
            tron: { url: "", tokens: {} },
            solana: { rpcUrl: devnet.url, tokens: { USDT: devnet.usdtMint } },
            pid: 0
          }
          const tx = yield* payFromCustomer(file, "SOLANA-USDT", address, "7.25")
          const client = yield* makeSolanaClient({
            rpcUrl: devnet.url,
            tokens: new Map([["USDT", { mint: devnet.usdtMint, decimals: 6 }]])
          })
          // the chain moves on well past the payment before the indexer first runs
          const paidIn = yield* eventually(
            Effect.map(client.transaction(tx), (found) => Option.flatMap(found, (t) => t.blockNumber)),
            Option.isSome,
            10_000
          )
          const slot = Option.getOrElse(paidIn, () => 0n)
          yield* eventually(
            Effect.sync(() => BigInt(devnet.chain.finalized)),
            (f) => f > slot + 20n,
            10_000
          )
          const fiber = yield* Effect.fork(
            runChainIndexer(client, {
              batchSize: 50,
              pollInterval: Duration.millis(50),
              startBlock: Option.none(),
              network: "devnet"
            })
          )
          const sql = yield* SqlClient.SqlClient
          const credited = sql<{ amount: string; status: string }>`
          SELECT trim_scale(amount)::text AS amount, status FROM transactions WHERE chain = 'SOLANA' AND tx_hash = ${tx} AND type = 'deposit'`
          expect(yield* eventually(credited, (rows) => rows.some((r) => r.status === "confirmed"), 30_000)).toEqual([
            { amount: "7.25", status: "confirmed" }
          ])
          const [cursor] = yield* sql<{
            started: string
          }>`SELECT started_at_block::text AS started FROM indexer_cursors WHERE chain = 'SOLANA'`
          expect(BigInt(cursor?.started ?? "-1")).toBeLessThan(slot)
          yield* Fiber.interrupt(fiber)
        }),
      { timeout: 60_000 }
    )

    // found by review: a probe below a pruned node's ledger failed the whole start, retried every 10 s for ever
    it.scoped(
      "nodes that no longer hold blocks that old: the oldest block they hold, said to be a truncated start; no address yet: the head",
      () =>
        Effect.gen(function* () {
          const devnet = yield* startSolanaDevnet({ slotMs: 20, finalityLag: 4 })
          yield* eventually(
            Effect.sync(() => devnet.chain.finalized),
            (f) => f > 120,
            10_000
          )
          const pruned = yield* startPrunedSolanaNode(devnet.url, () => 77)
          const client = yield* makeSolanaClient({ rpcUrl: pruned.url, tokens: new Map() })
          const [head] = yield* client.blocks(110n, 110n)
          if (head === undefined) return yield* Effect.dieMessage("no block 110")
          const start = yield* startBlockFor(client, head, new Date(Date.now() - 3_600_000))
          expect([start.block.number, start.truncated]).toEqual([77n, true])
          // a node that holds everything: the devnet is younger than the address, its first block
          const whole = yield* makeSolanaClient({ rpcUrl: devnet.url, tokens: new Map() })
          const all = yield* startBlockFor(whole, head, new Date(Date.now() - 3_600_000))
          expect([all.block.number <= 1n, all.truncated]).toEqual([true, false])
          expect(yield* startBlockFor(client, head, null)).toEqual({ block: head, truncated: false })
        }),
      { timeout: 60_000 }
    )
  })
})
