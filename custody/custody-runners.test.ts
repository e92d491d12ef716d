import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import * as path from "node:path"
import { freePort, runningEmbeddedUrl } from "../src/database/embedded-postgres.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { isAlive } from "../src/processes/child-process.js"
import { asRecord } from "../test/json.js"
import {
  api,
  processWorkDir,
  readDevnetFile,
  startService,
  type ServiceProcess,
  until
} from "../test/service-process.js"

const workDir = processWorkDir("facet-custody-runners-")

const CLUSTER_ENV = { FACET_CUSTODY_POLL_MS: "200", FACET_CLUSTER_SHARD_LOCK_MS: "3000" }

const sweepState = (service: ServiceProcess, apiKey: string, operationId: string) =>
  Effect.map(api(service, "GET", `/v1/wallet-assets/BEP20-USDT/sweeps/${operationId}`, { apiKey }), (r) =>
    asRecord(r.body)
  )

describe("wallet actors on two runners sharing the database", () => {
  it.scopedLive(
    "one sweep per wallet across processes; a runner killed with a sweep in flight has it finished by the other",
    () =>
      Effect.gen(function* () {
        const dir = yield* workDir
        const dataA = path.join(dir, "a")
        // runner A owns the devnets and the embedded database
        const a = yield* startService(dataA, "a", {
          ...CLUSTER_ENV,
          FACET_CLUSTER_RUNNER_ADDRESS: `127.0.0.1:${yield* freePort}`
        })
        const devnet = yield* readDevnetFile(dataA)
        const databaseUrl = Option.getOrThrow(runningEmbeddedUrl(dataA))
        // runner B: the same database, keys and chains (as a "mainnet" of A's devnet nodes), no indexers; it
        // kills itself the moment it has signed a sweep, so whatever wallet it holds then has a sweep in flight
        const b = yield* startService(path.join(dir, "b"), "b", {
          ...CLUSTER_ENV,
          FACET_CLUSTER_RUNNER_ADDRESS: `127.0.0.1:${yield* freePort}`,
          FACET_FAULT_CRASH_POINT: "collection:after-sign",
          DATABASE_URL: Redacted.value(databaseUrl),
          FACET_MASTER_SEED_FILE: path.join(dataA, "master-seed.dev.txt"),
          FACET_NETWORK: "mainnet",
          FACET_INDEXER_CHAINS: "none",
          FACET_BEP20_RPC_URL: devnet.bep20.rpcUrl,
          FACET_BEP20_CHAIN_ID: String(devnet.bep20.chainId),
          // anvil has no fast finality (its "finalized" block trails far behind): finality by depth, as A has
          FACET_BEP20_FINALITY: "depth",
          FACET_TOKEN_BEP20_USDT: devnet.bep20.tokens.USDT ?? "",
          FACET_TRON_API_URL: devnet.tron.url,
          FACET_TOKEN_TRC20_USDT: devnet.tron.tokens.USDT ?? "",
          FACET_SOLANA_RPC_URL: devnet.solana.rpcUrl,
          FACET_TOKEN_SOLANA_USDT: devnet.solana.tokens.USDT ?? ""
        })
        const apply = yield* api(a, "POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Runners ${Date.now()}`,
            business_type: "exchange",
            use_case: "deposits",
            agree_terms: true,
            integration_mode: "exchange_wallet"
          }
        })
        const apiKey = String(asRecord(asRecord(apply.body).env).FACET_API_KEY)
        // B holds its share of the wallet actors' shards before any sweep (on a busy machine it took them late,
        // every actor ran on A, and B never signed)
        const bShards = Effect.gen(function* () {
          const pg = yield* PgClient.PgClient
          // on PostgreSQL a shard lock is an advisory lock held by its runner's lock connection: B's is the
          // smaller holder (A also holds the indexers' shards)
          const holders = yield* pg<{
            n: number
          }>`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted GROUP BY pid ORDER BY n`
          return holders.length >= 2 ? (holders[0]?.n ?? 0) : 0
        }).pipe(
          Effect.provide(Layer.provide(PgClient.layer({ url: databaseUrl, maxConnections: 1 }), Reactivity.layer)),
          Effect.orDie
        )
        yield* until("runner B to hold wallet shards", bShards, (n) => n >= 120, 60_000)
        // eight funded wallets: the cluster spreads their actors over both runners' shards
        const wallets = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, i) => i),
          (i) =>
            Effect.map(
              api(a, "POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: `user-${i}`, chain: "BEP20", currency: "USDT" }
              }),
              (r) => asRecord(r.body)
            )
        )
        for (const w of wallets) yield* payFromCustomer(devnet, "BEP20-USDT", String(w.address), "300")
        yield* until(
          "the deposits to be final",
          api(a, "GET", "/v1/transactions?type=deposit&status=confirmed&limit=100", { apiKey }),
          (r) => asRecord(r.body).total === 8
        )

        // the same wallet swept through both processes at once: one sweep, one 409
        const [first] = wallets
        const both = yield* Effect.all(
          [
            api(a, "POST", "/v1/wallet-assets/BEP20-USDT/sweep", {
              apiKey,
              json: { from_wallet_id: first?.wallet_id }
            }),
            api(b, "POST", "/v1/wallet-assets/BEP20-USDT/sweep", { apiKey, json: { from_wallet_id: first?.wallet_id } })
          ],
          { concurrency: 2 }
        )
        expect(both.map((r) => r.status).sort()).toEqual([200, 409])
        const operations = [String(asRecord(both.find((r) => r.status === 200)?.body).operation_id)]

        // the rest, one by one through A, until B dies holding one of them
        for (const w of wallets.slice(1)) {
          if (!isAlive(b.pid)) break
          const res = yield* api(a, "POST", "/v1/wallet-assets/BEP20-USDT/sweep", {
            apiKey,
            json: { from_wallet_id: w.wallet_id }
          })
          expect(res.status).toBe(200)
          operations.push(String(asRecord(res.body).operation_id))
          yield* until(
            "the sweep to be signed or B to die",
            sweepState(a, apiKey, operations[operations.length - 1] ?? ""),
            (s) => !isAlive(b.pid) || typeof s.tx_hash === "string"
          )
        }
        yield* until(
          "runner B to have died with a sweep in flight",
          Effect.sync(() => isAlive(b.pid)),
          (alive) => !alive,
          60_000
        )
        expect(b.log()).toMatch(/killing the process after-sign of op_/)

        // A takes B's shards over and finishes everything, B's sweep included
        const finished = yield* Effect.forEach(operations, (id) =>
          until(
            `${id} to finish`,
            sweepState(a, apiKey, id),
            (s) => s.status === "COMPLETED" || s.status === "FAILED",
            120_000
          )
        )
        expect(finished.map((s) => s.status)).toEqual(operations.map(() => "COMPLETED"))
        const portfolio = asRecord((yield* api(a, "GET", "/v1/wallet-portfolio", { apiKey })).body)
        const usdt = (Array.isArray(portfolio.assets) ? portfolio.assets.map(asRecord) : []).find(
          (x) => x.currency === "USDT"
        )
        expect(usdt).toMatchObject({
          available_balance: String(300 * operations.length),
          uncollected_balance: String(300 * (8 - operations.length))
        })
      }),
    { timeout: 300_000 }
  )
})
