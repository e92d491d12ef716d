import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as path from "node:path"
import { freePort } from "../src/database/embedded-postgres.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { tronCustomerAddress } from "../src/devnet/devnet-customers.js"
import type { DevnetFile } from "../src/devnet/devnets.js"
import { startTronDevnet } from "../src/devnet/tron/tron-devnet.js"
import { tronHex41 } from "../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../src/keys/master-seed.js"
import { LocalSignerLive, Signer } from "../src/keys/signer.js"
import { isAlive } from "../src/processes/child-process.js"
import { createTestDatabase } from "../test/database.js"
import { TEST_MNEMONIC } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { api, FAST_DEVNETS, processWorkDir, type ServiceProcess, startService, until } from "../test/service-process.js"

const workDir = processWorkDir("facet-indexer-singleton-")

/** The indexer state a runner's /health shows for TRC20. */
const trc20 = (service: ServiceProcess) =>
  Effect.map(api(service, "GET", "/health"), (r) => {
    const indexers = asRecord(r.body).indexers
    return asRecord((Array.isArray(indexers) ? indexers.map(asRecord) : []).find((i) => i.chain === "TRC20"))
  })

/** The pid in a fence holder's name (`host:pid:random`). */
const pidOf = (holder: string | undefined) => Number(holder?.split(":")[1] ?? 0)

describe("each chain's indexer is a cluster singleton", () => {
  it.scopedLive(
    "it runs on one of two runners; that runner killed, the other takes the chain over and credits what was paid meanwhile",
    () =>
      Effect.gen(function* () {
        const dir = yield* workDir
        // the database and the chain live in this test process: the runner killed takes neither with it
        const databaseUrl = yield* createTestDatabase
        const sql = yield* PgClient.make({ url: databaseUrl, maxConnections: 2 }).pipe(Effect.provide(Reactivity.layer))
        const tron = yield* startTronDevnet({
          blockTimeMs: Number(FAST_DEVNETS.FACET_DEVNET_TRON_BLOCK_MS),
          solidLag: Number(FAST_DEVNETS.FACET_CONFIRMATIONS_TRC20)
        })
        const [gas] = yield* Effect.flatMap(Signer, (signer) => signer.deriveAddresses("TRON", 0, [0])).pipe(
          Effect.provide(LocalSignerLive.pipe(Layer.provide(masterSeedFromMnemonic(TEST_MNEMONIC))))
        )
        for (const [address, currency, amount] of [
          [gas?.address, "TRX", 100_000n],
          [tronCustomerAddress, "TRX", 1_000n],
          [tronCustomerAddress, "USDT", 1_000n]
        ] as const) {
          const hex = tronHex41(address)
          if (hex !== undefined) tron.ledger.fund(hex, currency, amount * 10n ** 6n)
        }
        const chain: DevnetFile = {
          bep20: { rpcUrl: "http://127.0.0.1:9", chainId: 56, tokens: {} },
          tron: { url: tron.url, tokens: tron.tokens },
          solana: { rpcUrl: "http://127.0.0.1:9", tokens: {} },
          pid: process.pid
        }
        // two socket runners indexing TRC20 as their "mainnet" (only TRC20 has a node; the others are never read)
        const start = (name: string) =>
          Effect.flatMap(freePort, (port) =>
            startService(path.join(dir, name), name, {
              DATABASE_URL: Redacted.value(databaseUrl),
              FACET_NETWORK: "mainnet",
              FACET_MASTER_SEED: TEST_MNEMONIC,
              FACET_INDEXER_CHAINS: "TRC20",
              FACET_CLUSTER_RUNNER_ADDRESS: `127.0.0.1:${port}`,
              // a takeover after about this (the default, 10 s, would stretch the test)
              FACET_CLUSTER_SHARD_LOCK_MS: "5000",
              FACET_TRON_API_URL: tron.url,
              FACET_TOKEN_TRC20_USDT: tron.tokens.USDT,
              FACET_BEP20_RPC_URL: chain.bep20.rpcUrl,
              FACET_SOLANA_RPC_URL: chain.solana.rpcUrl
            })
          )
        // a port found free can be taken by another suite's process before the runner binds it (a CI run
        // failed so, EADDRINUSE): that runner is started again on another
        const runner = (name: string) =>
          start(name).pipe(
            Effect.catchAllDefect((defect) =>
              String(defect).includes("EADDRINUSE") ? start(name) : Effect.die(defect)
            )
          )
        // together, on a fresh database: @effect/cluster creates its own tables at start, and two processes
        // doing it at once collided in PostgreSQL's catalog (duplicate pg_type key) until src/cluster.ts
        // built the cluster under an advisory lock
        const runners = yield* Effect.all([runner("a"), runner("b")], { concurrency: 2 })

        // one of them runs the chain's indexer: the fence names its process, its /health follows the chain
        // and the other's stands by; the same a while later (the cluster has settled)
        const holderNow = Effect.map(
          sql<{ holder: string }>`SELECT holder FROM indexer_leases WHERE chain = 'TRC20'`,
          (rows) => rows[0]?.holder ?? ""
        ).pipe(Effect.orDie)
        const settled = Effect.gen(function* () {
          const holder = yield* holderNow
          const states = yield* Effect.forEach(runners, (r) =>
            Effect.map(trc20(r), (s) => [r.pid, s.state, s.detail] as const)
          )
          yield* Effect.sleep("1500 millis")
          return { holder, states, same: holder === (yield* holderNow) }
        })
        const before = yield* until(
          "one runner to index TRC20 and the other to stand by",
          settled,
          (s) =>
            // (started together, the one standing by may first have read the fence before anyone held it:
            // its detail follows at its next look at the database)
            s.same &&
            s.states.every(([pid, state, detail]) =>
              pid === pidOf(s.holder)
                ? state === "following"
                : state === "standby" && detail === `indexed by ${s.holder}`
            ),
          60_000
        )
        const holder = runners.find((r) => r.pid === pidOf(before.holder))
        const other = runners.find((r) => r.pid !== pidOf(before.holder))
        if (holder === undefined || other === undefined)
          return yield* Effect.dieMessage(`the fence names no runner: ${before.holder}`)
        // the runner standing by is ready and healthy, and says who indexes the chain
        expect((yield* trc20(other)).detail).toBe(`indexed by ${before.holder}`)
        expect((yield* api(other, "GET", "/health")).status).toBe(200)

        const apply = yield* api(other, "POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Singleton ${Date.now()}`,
            business_type: "exchange",
            use_case: "deposits",
            agree_terms: true,
            integration_mode: "exchange_wallet"
          }
        })
        const apiKey = String(asRecord(asRecord(apply.body).env).FACET_API_KEY)
        const deposit = asRecord(
          (yield* api(other, "POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: "u1", chain: "TRC20", currency: "USDT" }
          })).body
        )
        const address = String(deposit.address)

        // what the OOM killer does: the holder's one node process, nothing else; the chain is paid meanwhile
        const logBefore = other.log().length
        const killedAt = Date.now()
        process.kill(holder.pid, "SIGKILL")
        yield* until(
          "the holder to die",
          Effect.sync(() => isAlive(holder.pid)),
          (alive) => !alive,
          10_000
        )
        yield* payFromCustomer(chain, "TRC20-USDT", address, "7")

        const taken = yield* until(
          "the other runner to take the chain over",
          holderNow,
          (h) => pidOf(h) === other.pid,
          30_000
        )
        const takenAfterMs = Date.now() - killedAt
        const credit = yield* until(
          "the deposit to be confirmed and on the ledger",
          sql<{ status: string; amount: string; ledger: number }>`
          SELECT t.status, t.amount::text AS amount, (SELECT count(*)::int FROM ledger_transfers l WHERE l.reference = t.id) AS ledger
          FROM transactions t WHERE t.to_address = ${address} AND t.type = 'deposit'`.pipe(Effect.orDie),
          (rows) => rows[0]?.status === "confirmed" && rows[0].ledger > 0,
          30_000
        )
        const creditedAfterMs = Date.now() - killedAt
        console.log(
          `TRC20 indexer taken over ${takenAfterMs} ms after the SIGKILL (default shard lock 5 s); the deposit paid meanwhile credited after ${creditedAfterMs} ms`
        )
        expect(credit).toEqual([{ status: "confirmed", amount: "7", ledger: 1 }])
        expect(takenAfterMs).toBeLessThan(15_000)
        // the survivor started the chain's indexer after the kill, under the name now in the fence
        expect(other.log().slice(logBefore)).toContain(`TRC20 indexer runs here (${taken})`)
        // having credited it, it may still be catching up to the head on a loaded machine: it gets there
        const survivor = yield* until(
          "the survivor's TRC20 indexer to follow the head",
          trc20(other),
          (i) => i.state === "following",
          30_000
        )
        expect(survivor).toMatchObject({ state: "following" })
      }),
    { timeout: 120_000 }
  )
})
