import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Fiber, Layer, Option, Schema } from "effect"
import { randomInt } from "node:crypto"
import { runChainIndexer } from "../indexer/chain-indexer.js"
import { ChainClients, ChainClientsLive } from "../src/chains/chain-clients.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { AppConfig } from "../src/config.js"
import { tronAddress } from "../src/keys/address-encoding.js"
import { Onboarding } from "../src/merchants/onboarding.js"
import { SyntheticAccounts, type SyntheticChain } from "./catch-up-addresses.js"
import { BSC_TOKENS } from "./catch-up-bsc-chain.js"
import type { PaidTotals } from "./catch-up-paid.js"
import { type ServerStats, startChainServerProcess } from "./catch-up-server-process.js"
import { TRON_USDT } from "./catch-up-tron-chain.js"
import { benchCore, noChains, loadAverage, machine } from "./bench-environment.js"

/**
 * Catch-up at exchange scale (issue #13): the real indexer (runChainIndexer, the real TRON and BEP20 clients
 * behind the failover client) reads a synthetic mainnet-shaped chain of `--blocks` blocks from the bench
 * chain server, from block 1 to the head, at each `--latency` per request; blocks/s per chain and latency,
 * and every deposit the server paid to a watched address must be credited, no more, no less.
 *
 * 10,000 blocks by default: a 300-transaction TRON block costs the indexer ~10 ms of CPU (half of it
 * base58check-encoding every transfer's addresses), so the issue's 100,000 (`--blocks 100000`) takes about
 * an hour for the four runs on a 2-core machine; 10,000 take about six minutes.
 */
const Cli = Schema.Struct({
  blocks: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThanOrEqualTo(3)), {
    default: () => 10_000
  }),
  latency: Schema.optionalWith(
    Schema.compose(Schema.split(","), Schema.Array(Schema.NumberFromString.pipe(Schema.nonNegative()))),
    { default: () => [0, 30] }
  ),
  chains: Schema.optionalWith(Schema.compose(Schema.split(","), Schema.Array(Schema.Literal("TRC20", "BEP20"))), {
    default: () => ["TRC20", "BEP20"] as const
  }),
  watched: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.positive()), { default: () => 2_000 })
})

/** `--name value` pairs of the command line. */
const namedArguments = (args: ReadonlyArray<string>) => {
  const named: Record<string, string> = {}
  for (let i = 0; i < args.length; i += 2) named[(args[i] ?? "").replace(/^--/, "")] = args[i + 1] ?? ""
  return named
}

/** The currencies each chain pays in, each with a deposit address per watched user. */
const CURRENCIES: Record<SyntheticChain, ReadonlyArray<string>> = {
  TRC20: ["USDT", "TRX"],
  BEP20: ["USDT", "USDC", "BNB"]
}

interface Run {
  readonly chain: SyntheticChain
  readonly latencyMs: number
  readonly blocks: number
  readonly seconds: number
  readonly credited: number
  readonly paid: number
  readonly exact: boolean
  readonly requestsPerBlock: number
  /** CPU milliseconds per block: this process (the indexer) and the chain server's. */
  readonly indexerCpu: number
  readonly serverCpu: number
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
const log = (line: string) => Effect.sync(() => console.log(line))

/**
 * The bench's merchant and its watched deposit addresses (the synthetic chains' watched accounts), written
 * set-based once; a database that has them from an earlier run keeps them. BNB Smart Chain's USDC is a
 * watched token here: its policy row is added for the bench (the product has none yet).
 */
const setUp = (watched: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const onboarding = yield* Onboarding
    yield* sql`
      INSERT INTO wallet_asset_policies (chain, currency, display_name, status, decimals, amount_precision, gas_asset, is_native,
        can_deposit, can_collect, can_withdraw, default_for_new_merchants, main_key_mode, receive_key_mode, collection_mode,
        sweep_requires_gas, signing_implemented, metadata)
      SELECT chain, 'USDC', 'USD Coin (BNB Chain, bench)', status, decimals, amount_precision, gas_asset, is_native, can_deposit, can_collect,
        can_withdraw, false, main_key_mode, receive_key_mode, collection_mode, sweep_requires_gas, signing_implemented, '{"standard": "BEP20", "bench": true}'
      FROM wallet_asset_policies WHERE chain = 'BEP20' AND currency = 'USDT'
      ON CONFLICT (chain, currency) DO NOTHING`
    const [existing] = yield* sql<{ merchant_id: string; n: number }>`
      SELECT merchant_id, (SELECT count(*)::int FROM wallets WHERE id LIKE 'wcatchup\\_%') AS n FROM wallets WHERE id = 'wcatchup_TRC20_0'`
    if (existing !== undefined) {
      if (existing.n !== 2 * watched)
        return yield* Effect.dieMessage(
          `the database holds ${existing.n / 2} watched addresses per chain from an earlier run, not ${watched}: use --watched ${existing.n / 2} or a fresh database`
        )
      yield* log(`setup: reusing ${fmt(watched)} watched deposit addresses per chain from an earlier run`)
      return existing.merchant_id
    }
    const { response } = yield* onboarding.apply(
      {
        project_name: `Catch-up bench ${Date.now()}`,
        business_type: "bench",
        use_case: "catch-up benchmark",
        agree_terms: true,
        integration_mode: "exchange_wallet"
      },
      {}
    )
    const merchantId = response.merchant_id
    for (const chain of ["TRC20", "BEP20"] as const) {
      const accounts = new SyntheticAccounts(chain, watched)
      const addresses = JSON.stringify(Array.from({ length: watched }, (_, i) => accounts.address(i)))
      yield* sql`
        INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index, external_user_id)
        SELECT 'wcatchup_' || ${chain} || '_' || (a.i - 1), ${merchantId}, 'receive', 'deposit', ${chain}, ${chain === "TRC20" ? "TRON" : "EVM"}, a.address,
               'm/catch-up/' || (a.i - 1), 999997, a.i - 1, 'catchup-' || (a.i - 1)
        FROM json_array_elements_text(${addresses}::json) WITH ORDINALITY AS a (address, i)`
      yield* sql`
        INSERT INTO deposit_addresses (id, merchant_id, external_user_id, chain, currency, wallet_id, address)
        SELECT 'dcatchup_' || w.network || '_' || c.currency || '_' || w.address_index, w.merchant_id, w.external_user_id, w.network, c.currency, w.id, w.address
        FROM wallets w CROSS JOIN json_array_elements_text(${JSON.stringify(CURRENCIES[chain])}::json) AS c (currency)
        WHERE w.id LIKE 'wcatchup\\_%' AND w.network = ${chain}`
    }
    yield* sql`ANALYZE wallets, deposit_addresses`
    yield* log(
      `setup: ${fmt(watched)} watched deposit addresses per chain (TRC20: USDT, TRX; BEP20: USDT, USDC, BNB) for merchant ${merchantId}`
    )
    return merchantId
  })

/** Confirmed deposits of the bench's merchant on `chain`, per currency: count and sum in base units. */
const creditedOn = (chain: SyntheticChain, merchantId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ currency: string; n: number; units: string; pending: number }>`
      SELECT t.currency, (count(*) FILTER (WHERE t.status = 'confirmed'))::int AS n,
             coalesce(trim_scale(sum(t.amount * 10::numeric ^ a.decimals) FILTER (WHERE t.status = 'confirmed')), 0)::text AS units,
             (count(*) FILTER (WHERE t.status = 'pending'))::int AS pending
      FROM transactions t JOIN wallet_asset_policies a ON a.chain = t.chain AND a.currency = t.currency
      WHERE t.chain = ${chain} AND t.merchant_id = ${merchantId} AND t.type = 'deposit'
      GROUP BY t.currency`
    return new Map(rows.map((r) => [r.currency, { count: r.n, amount: BigInt(r.units), pending: r.pending }]))
  })

const requestsOf = (before: ServerStats, after: ServerStats) => after.httpRequests - before.httpRequests

const catchUp = (
  chain: SyntheticChain,
  server: Effect.Effect.Success<ReturnType<typeof startChainServerProcess>>,
  options: { readonly head: number; readonly latencyMs: number; readonly merchantId: string }
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    // a fresh start on this run's chain: its cursor, block window, identity and fence go
    yield* sql`DELETE FROM indexer_cursors WHERE chain = ${chain}`
    yield* sql`DELETE FROM indexed_blocks WHERE chain = ${chain}`
    yield* sql`DELETE FROM chain_identities WHERE chain = ${chain}`
    yield* sql`DELETE FROM indexer_leases WHERE chain = ${chain}`
    const before = yield* creditedOn(chain, options.merchantId)
    const statsBefore = yield* server.stats
    const endpoints = Layer.succeed(ChainEndpoints, {
      bep20: {
        rpcUrl: server.bscUrl,
        chainId: 56,
        tokens: new Map([
          ["USDT", BSC_TOKENS.USDT],
          ["USDC", BSC_TOKENS.USDC]
        ]),
        confirmations: 0,
        traces: "off"
      },
      tron: {
        url: server.tronUrl,
        tokens: new Map([["USDT", tronAddress(Buffer.from(TRON_USDT.slice(2), "hex"))]]),
        confirmations: 0
      },
      solana: { rpcUrl: "http://127.0.0.1:9", tokens: new Map() }
    })
    const clients = yield* Effect.provide(ChainClients, ChainClientsLive.pipe(Layer.provide(endpoints)))
    const client = Option.getOrThrow(clients.get(chain))

    const started = Date.now()
    const cpuBefore = process.cpuUsage()
    const indexer = yield* Effect.fork(
      runChainIndexer(client, {
        batchSize: config.indexer.batchSize,
        prefetchBatches: config.indexer.prefetchBatches,
        writers: config.indexer.writers,
        pollInterval: Duration.millis(100),
        startBlock: Option.some(1n),
        network: "devnet"
      })
    )
    let window = { at: started, cursor: 1 }
    let moved = { at: started, cursor: 0 }
    for (;;) {
      yield* Effect.sleep("200 millis")
      const [row] = yield* sql<{
        n: string
      }>`SELECT block_number::text AS n FROM indexer_cursors WHERE chain = ${chain}`
      const cursor = Number(row?.n ?? 0)
      if (cursor >= options.head) break
      const stopped = yield* Fiber.poll(indexer)
      if (Option.isSome(stopped))
        return yield* Effect.dieMessage(
          `${chain}: the indexer stopped at block ${cursor}: ${JSON.stringify(stopped.value)}`
        )
      const now = Date.now()
      if (cursor > moved.cursor) moved = { at: now, cursor }
      else if (now - moved.at > 120_000)
        return yield* Effect.dieMessage(`${chain}: no progress for two minutes at block ${cursor}`)
      if (now - window.at >= 10_000) {
        const rate = (cursor - window.cursor) / ((now - window.at) / 1000)
        yield* log(
          `  ${chain} at ${options.latencyMs} ms: block ${fmt(cursor)} of ${fmt(options.head)} (${fmt((100 * cursor) / options.head, 1)}%), ${fmt(rate)} blocks/s over the last ${fmt((now - window.at) / 1000)} s, ${fmt((now - started) / 1000)} s in`
        )
        window = { at: now, cursor }
      }
    }
    const seconds = (Date.now() - started) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    yield* Fiber.interrupt(indexer)
    const statsAfter = yield* server.stats
    const after = yield* creditedOn(chain, options.merchantId)
    // block 1 is where the indexer starts (stored as its cursor, not read for transfers): 2…head are indexed
    const paid: PaidTotals = yield* server.paid(chain, 2, options.head)
    let exact = true
    let credited = 0
    let paidCount = 0
    for (const currency of new Set([...Object.keys(paid), ...after.keys()])) {
      const got = after.get(currency) ?? { count: 0, amount: 0n, pending: 0 }
      const had = before.get(currency) ?? { count: 0, amount: 0n, pending: 0 }
      const want = paid[currency] ?? { count: 0, amount: 0n }
      const count = got.count - had.count
      const amount = got.amount - had.amount
      credited += count
      paidCount += want.count
      const same = count === want.count && amount === want.amount && got.pending === 0
      exact &&= same
      yield* log(
        `  ${chain} ${currency}: credited ${fmt(count)} deposits, ${amount} base units; the chain paid ${fmt(want.count)}, ${want.amount}${got.pending > 0 ? `; ${got.pending} still pending` : ""} ${same ? "✔" : "✘ MISMATCH"}`
      )
    }
    if (statsAfter.unknown > statsBefore.unknown) {
      yield* log(
        `  ${chain}: the chain server got ${statsAfter.unknown - statsBefore.unknown} call(s) it does not serve (see its log above)`
      )
    }
    const blocks = options.head - 1
    const requestsPerBlock = requestsOf(statsBefore, statsAfter) / blocks
    const indexerCpu = (cpu.user + cpu.system) / 1000 / blocks
    const serverCpu = (statsAfter.cpuMs - statsBefore.cpuMs) / blocks
    yield* log(
      `${chain} at ${options.latencyMs} ms: ${fmt(blocks)} blocks in ${fmt(seconds, 1)} s = ${fmt(blocks / seconds)} blocks/s; ${fmt(requestsPerBlock, 2)} HTTP requests per block; CPU per block: indexer ${fmt(indexerCpu, 2)} ms, chain server ${fmt(serverCpu, 2)} ms; deposits ${exact ? "exact ✔" : "WRONG ✘"}`
    )
    return {
      chain,
      latencyMs: options.latencyMs,
      blocks,
      seconds,
      credited,
      paid: paidCount,
      exact,
      requestsPerBlock,
      indexerCpu,
      serverCpu
    } satisfies Run
  })

const program = Effect.gen(function* () {
  const cli = yield* Schema.decodeUnknown(Cli)(namedArguments(process.argv.slice(2)))
  const config = yield* AppConfig
  yield* log(`machine: ${machine()}; load average ${loadAverage()}`)
  yield* log(
    `catch-up of ${fmt(cli.blocks)} blocks per chain (${cli.chains.join(", ")}) at ${cli.latency.map((l) => `${l} ms`).join(", ")} per request; batch ${config.indexer.batchSize} blocks, ${config.indexer.prefetchBatches} batches fetched ahead, ${config.indexer.writers} written at once`
  )
  const merchantId = yield* setUp(cli.watched)
  const runs: Array<Run> = []
  for (const latencyMs of cli.latency) {
    yield* Effect.scoped(
      Effect.gen(function* () {
        const seed = randomInt(1, 2 ** 31)
        const server = yield* startChainServerProcess({ head: cli.blocks, watched: cli.watched, seed, latencyMs })
        yield* log(`chain server: seed ${seed}, ${latencyMs} ms per request, head ${fmt(cli.blocks)}`)
        for (const chain of cli.chains)
          runs.push(yield* catchUp(chain, server, { head: cli.blocks, latencyMs, merchantId }))
      })
    )
  }

  yield* log(`\nload average at the end ${loadAverage()}`)
  yield* log(
    "| chain | latency | blocks | seconds | blocks/s | requests per block | CPU ms per block (indexer / chain server) | deposits credited | paid to watched | exact | ratio to 0 ms | within 2× |"
  )
  yield* log("|---|---|---|---|---|---|---|---|---|---|---|---|")
  for (const run of runs) {
    const base = runs.find((r) => r.chain === run.chain && r.latencyMs === 0)
    const rate = run.blocks / run.seconds
    const ratio = base === undefined || run.latencyMs === 0 ? undefined : rate / (base.blocks / base.seconds)
    yield* log(
      `| ${run.chain} | ${run.latencyMs} ms | ${fmt(run.blocks)} | ${fmt(run.seconds, 1)} | ${fmt(rate)} | ${fmt(run.requestsPerBlock, 2)} | ${fmt(run.indexerCpu, 1)} / ${fmt(run.serverCpu, 1)} | ${fmt(run.credited)} | ${fmt(run.paid)} | ${run.exact ? "✔" : "✘"} | ${ratio === undefined ? "" : fmt(ratio, 2)} | ${ratio === undefined ? "" : ratio >= 0.5 ? "✔" : "✘"} |`
    )
  }
  if (runs.some((r) => !r.exact))
    return yield* Effect.dieMessage("deposits credited differ from what the chain paid to watched addresses")
})

NodeRuntime.runMain(program.pipe(Effect.provide(benchCore("none", noChains))))
