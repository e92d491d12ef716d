import { Reactivity } from "@effect/experimental"
import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import {
  Config,
  Console,
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Option,
  Redacted,
  Schema
} from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { createPublicClient, createWalletClient, http, type Address } from "viem"
import { DEFAULT_CATCH_UP_WRITERS } from "../indexer/catch-up-writer.js"
import { runChainIndexer } from "../indexer/chain-indexer.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { appConfig } from "../src/config.js"
import { freePort, startEmbeddedPostgres } from "../src/database/embedded-postgres.js"
import { DepositAddresses } from "../src/deposits/deposit-addresses.js"
import { bep20Customer } from "../src/devnet/devnet-customers.js"
import { mineBlocks, startAnvilDevnet, tokenAbi } from "../src/devnet/evm/anvil-devnet.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { Onboarding } from "../src/merchants/onboarding.js"
import { withLifeline } from "../src/processes/child-process.js"
import { benchCore } from "./bench-environment.js"

const ADDRESSES = 2_000
const TRANSFERS = 20_000
const PER_TX = 100
/** Empty blocks mined after the workload before the peers run, so each counts the whole range as final. */
const FINALITY_MARGIN = 100
/** The squid's finality depth (the docs' example value); Ponder's is fixed by chain id, 30 for 31337. */
const SQUID_FINALITY_CONFIRMATION = 75
const TARGET_VS_SUBSQUID = 1.5
const TARGET_VS_PONDER = 10

/**
 * End to end: anvil with 20,000 token Transfer events in batched transactions (100 per transaction) to
 * 2,000 deposit addresses of one merchant; the time from the BEP20 indexer's start until all 20,000 are
 * attributed and persisted (confirmed, with ledger, balances and webhook events). Twice, each on a fresh
 * database and over the same blocks (from the token's deployment to the last transfer): with call traces
 * off, and with every block's call tree read (`callTracer`, contract-sent BNB), which is the cost of
 * crediting internal transfers. Then the peers on the same chain and blocks (bench/peers: a Subsquid
 * squid and a Ponder app, each storing one row per Transfer in PostgreSQL), from their process start until
 * all rows are stored.
 */

interface Workload {
  readonly rpcUrl: string
  readonly token: Address
  readonly addresses: ReadonlyArray<Address>
  /** The token's deployment block: the first block every indexer reads. */
  readonly fromBlock: bigint
  /** The block of the last transfer: the last block every indexer must read. */
  readonly toBlock: bigint
}

interface Timing {
  readonly seconds: number
  /** From the start until the first row was visible: start-up and the first batch. */
  readonly firstRowSeconds: number
}

type AnvilChain = { readonly rpcUrl: string; readonly chainId: number; readonly tokens: { readonly USDT: Address } }

const eventsPerSecond = (t: Timing) => TRANSFERS / t.seconds
const rate = (t: Timing) => `${Math.round(eventsPerSecond(t)).toLocaleString()} events/s`

/** The first block at which the token has code: its deployment. */
const deploymentBlock = (rpcUrl: string, token: Address) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(rpcUrl), cacheTime: 0 })
    const head = yield* Effect.promise(() => client.getBlockNumber())
    for (let n = 0n; n <= head; n++) {
      const code = yield* Effect.promise(() => client.getCode({ address: token, blockNumber: n }))
      if (code !== undefined && code !== "0x") return n
    }
    return yield* Effect.dieMessage(`no code at ${token} up to block ${head}`)
  })

/** Sends the workload: TRANSFERS token transfers, PER_TX per transaction, round-robin over the addresses. */
const sendTransfers = (anvil: AnvilChain, addresses: ReadonlyArray<Address>) =>
  Effect.gen(function* () {
    const publicClient = createPublicClient({ transport: http(anvil.rpcUrl), cacheTime: 0 })
    const wallet = createWalletClient({ account: bep20Customer, transport: http(anvil.rpcUrl, { retryCount: 0 }) })
    const chain = {
      id: anvil.chainId,
      name: "devnet",
      nativeCurrency: { name: "BNB", symbol: "BNB", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } }
    }
    const fromBlock = yield* deploymentBlock(anvil.rpcUrl, anvil.tokens.USDT)
    const sent = Date.now()
    const hashes: Array<`0x${string}`> = []
    for (let t = 0; t < TRANSFERS / PER_TX; t++) {
      const to = Array.from(
        { length: PER_TX },
        (_, i) =>
          addresses[(t * PER_TX + i) % addresses.length] ?? addresses[0] ?? "0x0000000000000000000000000000000000000000"
      )
      hashes.push(
        yield* Effect.promise(() =>
          wallet.writeContract({
            address: anvil.tokens.USDT,
            abi: tokenAbi,
            functionName: "batchTransfer",
            args: [to, to.map((_, i) => 10n ** 18n + BigInt(i))],
            chain,
            gas: 5_000_000n
          })
        )
      )
    }
    const last = yield* Effect.promise(() =>
      publicClient.waitForTransactionReceipt({ hash: hashes[hashes.length - 1] ?? "0x", pollingInterval: 50 })
    )
    yield* Console.log(
      `setup: ${addresses.length} deposit addresses; ${TRANSFERS} Transfer events in ${hashes.length} transactions, up to block ${last.blockNumber}, sent in ${((Date.now() - sent) / 1000).toFixed(1)} s; every indexer reads blocks ${fromBlock}..${last.blockNumber} (from the token's deployment)`
    )
    return {
      rpcUrl: anvil.rpcUrl,
      token: anvil.tokens.USDT,
      addresses,
      fromBlock,
      toBlock: last.blockNumber
    } satisfies Workload
  })

/**
 * One pass of our indexer on a fresh database. The first pass sends the workload to its merchant's
 * addresses; a later one finds the same addresses (the same seed and a fresh database derive them again)
 * and reads the same blocks.
 */
const pass = (anvil: AnvilChain, traces: "off" | "callTracer", existing: Option.Option<Workload>) =>
  Effect.gen(function* () {
    const endpoints = Layer.succeed(ChainEndpoints, {
      bep20: {
        rpcUrl: anvil.rpcUrl,
        chainId: anvil.chainId,
        tokens: new Map<string, Address>([["USDT", anvil.tokens.USDT]]),
        confirmations: 0,
        traces
      },
      tron: { url: "http://127.0.0.1:9", tokens: new Map(), confirmations: 1 },
      solana: { rpcUrl: "http://127.0.0.1:9", tokens: new Map() }
    })
    const batchSize = yield* Config.integer("BENCH_BATCH").pipe(Config.withDefault(50))
    const writers = yield* Config.integer("FACET_INDEXER_WRITERS").pipe(Config.withDefault(DEFAULT_CATCH_UP_WRITERS))
    return yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const onboarding = yield* Onboarding
      const deposits = yield* DepositAddresses
      const clients = yield* ChainClients
      const { response } = yield* onboarding.apply(
        {
          project_name: `E2E ${Date.now()}`,
          business_type: "bench",
          use_case: "e2e benchmark",
          agree_terms: true,
          integration_mode: "exchange_wallet"
        },
        {}
      )
      const addresses: Array<Address> = []
      for (let start = 0; start < ADDRESSES; start += 1000) {
        const batch = yield* deposits.batch(response.merchant_id, {
          external_user_ids: Array.from({ length: 1000 }, (_, i) => `user-${start + i}`),
          chain: "BEP20",
          currency: "USDT",
          continue_on_error: false
        })
        for (const item of batch.items) {
          const address = item.deposit_address?.address ?? ""
          if (isHexAddress(address)) addresses.push(address)
        }
      }
      const workload = Option.isSome(existing) ? existing.value : yield* sendTransfers(anvil, addresses)
      if (
        addresses.length !== workload.addresses.length ||
        addresses.some((a, i) => a.toLowerCase() !== workload.addresses[i]?.toLowerCase())
      ) {
        return yield* Effect.dieMessage(
          "this pass's deposit addresses differ from those the workload paid: it would not measure the same chain"
        )
      }

      const client = Option.getOrThrow(clients.get("BEP20"))
      yield* sql`DELETE FROM indexer_cursors WHERE chain = 'BEP20'`
      const started = Date.now()
      // the cursor names the last block read, so the indexer begins at the block after it: the deployment
      const indexer = yield* Effect.fork(
        runChainIndexer(client, {
          batchSize,
          writers,
          pollInterval: Duration.millis(20),
          startBlock: Option.some(workload.fromBlock - 1n),
          network: "devnet"
        })
      )
      // the cursor never passes a block whose rows are not committed: polling it (one row) tells when all
      // rows are persisted without a count over the growing table every 20 ms (which took a share of the
      // database's CPU from the writer); the rows are counted once at the end. The cursor may lag behind
      // batches already committed (two are written at once), so the first row is looked for by itself.
      let firstRowSeconds = Option.none<number>()
      for (;;) {
        if (Option.isNone(firstRowSeconds)) {
          const [any] = yield* sql<{
            id: string
          }>`SELECT id FROM transactions WHERE merchant_id = ${response.merchant_id} LIMIT 1`
          if (any !== undefined) firstRowSeconds = Option.some((Date.now() - started) / 1000)
        }
        const [cursor] = yield* sql<{
          n: string
        }>`SELECT block_number::text AS n FROM indexer_cursors WHERE chain = 'BEP20'`
        if (BigInt(cursor?.n ?? "0") >= workload.toBlock) break
        yield* Effect.sleep("20 millis")
      }
      const timing: Timing = {
        seconds: (Date.now() - started) / 1000,
        firstRowSeconds: Option.getOrElse(firstRowSeconds, () => 0)
      }
      yield* Fiber.interrupt(indexer)
      const [row] = yield* sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM transactions WHERE merchant_id = ${response.merchant_id} AND status = 'confirmed'`
      if (row?.n !== TRANSFERS)
        return yield* Effect.dieMessage(
          `the cursor reached block ${workload.toBlock} with ${row?.n ?? 0} of ${TRANSFERS} deposits confirmed`
        )
      yield* Console.log(
        `end to end, traces ${traces}: ${TRANSFERS} events attributed and persisted in ${timing.seconds.toFixed(2)} s = ${rate(timing)} (first deposit stored at ${timing.firstRowSeconds.toFixed(2)} s; target ≥ 30,000/s)`
      )
      return { workload, timing }
    }).pipe(Effect.provide(benchCore("none", endpoints)))
  }).pipe(Effect.scoped)

// ---------------------------------------------------------------------------------------------------
// The peers (bench/peers, a package of its own): each a child process, timed from its spawn until its
// table holds every Transfer log of the range.

/** Why a peer was not measured, and the end of its output when it has any. */
class PeerError extends Schema.TaggedError<PeerError>()("PeerError", {
  reason: Schema.String,
  output: Schema.optional(Schema.String)
}) {}

const PEERS_DIR = fileURLToPath(new URL("./peers/", import.meta.url))
const SQUID_DIR = path.join(PEERS_DIR, "squid")
const PONDER_DIR = path.join(PEERS_DIR, "ponder")
const peerFile = (...parts: ReadonlyArray<string>) => path.join(PEERS_DIR, ...parts)

const PackageVersion = Schema.parseJson(Schema.Struct({ version: Schema.String }))
const installedVersion = (pkg: string) =>
  Effect.try(() => fs.readFileSync(peerFile("node_modules", pkg, "package.json"), "utf8")).pipe(
    Effect.flatMap(Schema.decodeUnknown(PackageVersion)),
    Effect.map((p) => p.version),
    Effect.option
  )

/** What is missing for the peers to run, if anything. */
const peersMissing = Effect.sync(() =>
  [
    { name: "bench/peers/node_modules/ponder", file: peerFile("node_modules", "ponder", "package.json") },
    {
      name: "bench/peers/node_modules/@subsquid/evm-processor",
      file: peerFile("node_modules", "@subsquid", "evm-processor", "package.json")
    },
    { name: "bench/peers/squid/lib/main.js (the compiled squid)", file: path.join(SQUID_DIR, "lib", "main.js") }
  ]
    .filter(({ file }) => !fs.existsSync(file))
    .map(({ name }) => name)
)

/** True while any process of the group `pgid` runs. */
const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** Stops a peer and every process it started (its process group): SIGTERM, then SIGKILL. */
const stopGroup = (child: ChildProcess) =>
  Effect.gen(function* () {
    const pid = child.pid
    if (pid === undefined) return
    for (const [signal, grace] of [
      ["SIGTERM", 10_000],
      ["SIGKILL", 5_000]
    ] as const) {
      if (!groupAlive(pid)) return
      yield* Effect.sync(() => {
        try {
          process.kill(-pid, signal)
        } catch {
          // gone meanwhile
        }
      })
      const until = Date.now() + grace
      while (groupAlive(pid) && Date.now() < until) yield* Effect.sleep("50 millis")
    }
    if (groupAlive(pid)) yield* Console.log(`warning: peer process group ${pid} still runs after SIGKILL`)
  })

const logTail = (file: string, lines = 25) =>
  Effect.sync(() => {
    try {
      return fs
        .readFileSync(file, "utf8")
        .trimEnd()
        .split("\n")
        .slice(-lines)
        .map((line) => `    | ${line}`)
        .join("\n")
    } catch {
      return "    | (no output)"
    }
  })

// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC starts the colour codes it strips
const ANSI = /\u001b\[[0-9;]*m/g

/** Ponder's own account of its run: its tables, and when its backfill started and ended. */
const ponderLog = (file: string) =>
  Effect.sync(() =>
    (fs.existsSync(file) ? fs.readFileSync(file, "utf8").replace(ANSI, "").split("\n") : [])
      .filter((line) =>
        /Created database tables|Started backfill indexing|Finished fetching backfill|Completed backfill indexing/.test(
          line
        )
      )
      .map((line) => line.trim())
  )

/**
 * Runs `node script args` in `cwd` as a process group of its own (so its children stop with it), its output
 * in `logFile`; killed with the scope, and by the kernel if this process dies (setpriv's parent-death signal).
 */
const spawnPeer = (
  script: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>,
  logFile: string
) =>
  Effect.gen(function* () {
    const exited = yield* Deferred.make<string>()
    const child = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const out = fs.openSync(logFile, "a")
          const run = withLifeline(process.execPath, [script, ...args], "TERM")
          const started = spawn(run.command, run.args, {
            cwd,
            env: { ...process.env, ...env },
            stdio: ["ignore", out, out],
            detached: true
          })
          fs.closeSync(out)
          return started
        },
        catch: (cause) => new PeerError({ reason: `cannot start ${script}: ${String(cause)}` })
      }),
      stopGroup
    )
    child.once("exit", (code, signal) =>
      Deferred.unsafeDone(exited, Exit.succeed(signal === null ? `exit code ${code}` : `signal ${signal}`))
    )
    child.once("error", (error) => Deferred.unsafeDone(exited, Exit.succeed(`spawn error: ${error.message}`)))
    return { child, exited }
  })

/** Runs a command in `cwd` to its end (not timed): a peer's own schema step. */
const runToEnd = (
  script: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>,
  logFile: string
) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { exited } = yield* spawnPeer(script, args, cwd, env, logFile)
      const how = yield* Deferred.await(exited)
      if (how !== "exit code 0")
        return yield* new PeerError({
          reason: `${path.basename(script)} ${args.join(" ")} ended with ${how}`,
          output: yield* logTail(logFile)
        })
    })
  )

const Count = Schema.Struct({ n: Schema.Number })

/**
 * Polls `table`'s row count until it reaches `expected`; the time is from `started`. A table not created yet
 * counts 0 rows. Fails when the peer ends first or `timeout` passes.
 */
const waitForRows = (
  table: string,
  expected: number,
  started: number,
  exited: Deferred.Deferred<string>,
  timeout: Duration.Duration,
  logFile: string
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const count = sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`).pipe(
      Effect.flatMap((rows) => Schema.decodeUnknown(Schema.Array(Count))(rows)),
      Effect.map((rows) => rows[0]?.n ?? 0),
      Effect.orElseSucceed(() => 0)
    )
    let firstRowSeconds = Option.none<number>()
    for (;;) {
      const ended = yield* Deferred.poll(exited)
      const n = yield* count
      const elapsed = (Date.now() - started) / 1000
      if (n > 0 && Option.isNone(firstRowSeconds)) firstRowSeconds = Option.some(elapsed)
      if (n >= expected)
        return { seconds: elapsed, firstRowSeconds: Option.getOrElse(firstRowSeconds, () => elapsed) } satisfies Timing
      if (Option.isSome(ended)) {
        const how = yield* ended.value
        return yield* new PeerError({
          reason: `it ended (${how}) with ${n} of ${expected} rows`,
          output: yield* logTail(logFile)
        })
      }
      if (elapsed > Duration.toSeconds(timeout)) {
        return yield* new PeerError({
          reason: `${n} of ${expected} rows after ${Duration.format(timeout)} (BENCH_PEER_TIMEOUT_S)`,
          output: yield* logTail(logFile)
        })
      }
      yield* Effect.sleep("20 millis")
    }
  })

/** The peers' PostgreSQL: DATABASE_URL's server when set, else an embedded one like ours, in a throw-away directory. */
const peersPostgres = Effect.gen(function* () {
  const config = yield* Effect.orDie(appConfig)
  if (Option.isSome(config.databaseUrl)) return Redacted.value(config.databaseUrl.value)
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-bench-peers-pg-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const pg = yield* Effect.orDie(startEmbeddedPostgres({ dataDir: dir }))
  return Redacted.value(pg.url)
})

/** A fresh database of its own for one peer in the server at `adminUrl`, dropped with the scope. */
const freshDatabase = (adminUrl: string, name: string) =>
  Effect.gen(function* () {
    const admin = (statement: string) =>
      Effect.scoped(
        Effect.flatMap(PgClient.make({ url: Redacted.make(adminUrl), maxConnections: 1 }), (sql) =>
          sql.unsafe(statement)
        )
      ).pipe(Effect.provide(Reactivity.layer))
    yield* Effect.acquireRelease(
      admin(`CREATE DATABASE ${name}`).pipe(
        Effect.mapError((e) => new PeerError({ reason: `cannot create database ${name}: ${e.message}` }))
      ),
      () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return url.toString()
  })

/** The polling connection to a peer's database. */
const peerSql = (url: string) =>
  Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }), Reactivity.layer).pipe(
    Layer.mapError((e) => new PeerError({ reason: `cannot connect to its database: ${e.message}` }))
  )

interface PeerRun {
  readonly workload: Workload
  readonly adminUrl: string
  readonly expected: number
  readonly timeout: Duration.Duration
  readonly logDir: string
}

/**
 * Subsquid: `squid-typeorm-migration apply` creates its table (not timed, as our migrations are not), then
 * the compiled processor (`node lib/main.js`, as `sqd process` runs it) reads the range by RPC and ends.
 */
const runSubsquid = (run: PeerRun) =>
  Effect.scoped(
    Effect.gen(function* () {
      const dbUrl = yield* freshDatabase(run.adminUrl, `bench_squid_${Date.now()}`)
      const logFile = path.join(run.logDir, "subsquid.log")
      const env = {
        DB_URL: dbUrl,
        RPC_ANVIL_HTTP: run.workload.rpcUrl,
        TOKEN_ADDRESS: run.workload.token,
        FROM_BLOCK: String(run.workload.fromBlock),
        TO_BLOCK: String(run.workload.toBlock),
        FINALITY_CONFIRMATION: String(SQUID_FINALITY_CONFIRMATION)
      }
      yield* runToEnd(
        peerFile("node_modules", "@subsquid", "typeorm-migration", "bin", "squid-typeorm-migration"),
        ["apply"],
        SQUID_DIR,
        env,
        path.join(run.logDir, "subsquid-migration.log")
      )
      const started = Date.now()
      const { exited } = yield* spawnPeer(path.join(SQUID_DIR, "lib", "main.js"), [], SQUID_DIR, env, logFile)
      const timing = yield* waitForRows("transfer", run.expected, started, exited, run.timeout, logFile).pipe(
        Effect.provide(peerSql(dbUrl))
      )
      return { timing, own: [] }
    })
  )

/**
 * Ponder, cold: a fresh database (so an empty `ponder_sync` RPC cache too) and no `.ponder` directory;
 * `ponder start` (production mode) builds the app, creates its tables and indexes the range.
 */
const runPonder = (run: PeerRun) =>
  Effect.scoped(
    Effect.gen(function* () {
      const dbUrl = yield* freshDatabase(run.adminUrl, `bench_ponder_${Date.now()}`)
      const logFile = path.join(run.logDir, "ponder.log")
      const port = yield* Effect.orDie(freePort)
      yield* Effect.sync(() => fs.rmSync(path.join(PONDER_DIR, ".ponder"), { recursive: true, force: true }))
      const env = {
        DATABASE_URL: dbUrl,
        PONDER_RPC_URL_31337: run.workload.rpcUrl,
        TOKEN_ADDRESS: run.workload.token,
        FROM_BLOCK: String(run.workload.fromBlock),
        TO_BLOCK: String(run.workload.toBlock),
        // no network here but loopback: nothing to report to
        PONDER_TELEMETRY_DISABLED: "true"
      }
      const started = Date.now()
      const { exited } = yield* spawnPeer(
        peerFile("node_modules", "ponder", "dist", "esm", "bin", "ponder.js"),
        ["start", "--schema", "bench_cold", "--port", String(port)],
        PONDER_DIR,
        env,
        logFile
      )
      const timing = yield* waitForRows(
        "bench_cold.transfer",
        run.expected,
        started,
        exited,
        run.timeout,
        logFile
      ).pipe(Effect.provide(peerSql(dbUrl)))
      return { timing, own: yield* ponderLog(logFile) }
    })
  )

/**
 * The Transfer logs of the token in the range: what each peer must store (the workload, and the token's
 * mint). Asked 50 blocks at a time: the whole range in one answer is larger than viem takes (10 MB).
 */
const transferLogs = (workload: Workload) =>
  Effect.gen(function* () {
    const client = createPublicClient({ transport: http(workload.rpcUrl), cacheTime: 0 })
    let count = 0
    for (let from = workload.fromBlock; from <= workload.toBlock; from += 50n) {
      const to = from + 49n < workload.toBlock ? from + 49n : workload.toBlock
      const logs = yield* Effect.promise(() =>
        client.getContractEvents({
          address: workload.token,
          abi: tokenAbi,
          eventName: "Transfer",
          fromBlock: from,
          toBlock: to
        })
      )
      count += logs.length
    }
    return count
  })

const peers = (workload: Workload) =>
  Effect.scoped(
    Effect.gen(function* () {
      const missing = yield* peersMissing
      if (missing.length > 0) {
        yield* Console.log(
          `peers: not installed (missing ${missing.join(", ")}); run \`npm run bench:peers:install\` (bench/peers: Subsquid and Ponder, ~500 packages, not part of the root install) and run the bench again`
        )
        return { subsquid: Either.left("not installed"), ponder: Either.left("not installed") }
      }
      const timeout = yield* Config.integer("BENCH_PEER_TIMEOUT_S").pipe(
        Config.withDefault(600),
        Config.map((s) => Duration.seconds(s))
      )
      const versions = yield* Effect.all({
        processor: installedVersion("@subsquid/evm-processor"),
        store: installedVersion("@subsquid/typeorm-store"),
        ponder: installedVersion("ponder")
      })
      const version = (v: Option.Option<string>) => Option.getOrElse(v, () => "?")
      // the margin makes every block of the range final for both peers (their bulk path, not block-by-block)
      yield* mineBlocks(workload.rpcUrl, FINALITY_MARGIN)
      const expected = yield* transferLogs(workload)
      const logDir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-bench-peers-logs-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      const adminUrl = yield* peersPostgres
      const run: PeerRun = { workload, adminUrl, expected, timeout, logDir }
      yield* Console.log(
        `peers: same anvil, blocks ${workload.fromBlock}..${workload.toBlock} (${FINALITY_MARGIN} empty blocks mined after them), ${expected.toLocaleString()} Transfer logs (the ${TRANSFERS.toLocaleString()} and the token's mint), one row each in PostgreSQL; timed from the process's spawn; events/s counts the ${TRANSFERS.toLocaleString()}`
      )
      const report =
        (name: string) =>
        (
          result: Either.Either<{ readonly timing: Timing; readonly own: ReadonlyArray<string> }, PeerError>
        ): Effect.Effect<Either.Either<Timing, string>> =>
          Either.match(result, {
            onLeft: (e) =>
              Console.log(
                `${name}: not measured — ${e.reason}${e.output === undefined ? "" : `; the end of its output:\n${e.output}`}`
              ).pipe(Effect.as(Either.left(e.reason))),
            onRight: ({ timing, own }) =>
              Console.log(
                `${name}: ${expected.toLocaleString()} rows in ${timing.seconds.toFixed(2)} s = ${rate(timing)} (first row at ${timing.firstRowSeconds.toFixed(2)} s)${own.map((line) => `\n    its log: ${line}`).join("")}`
              ).pipe(Effect.as(Either.right(timing)))
          })
      const subsquid = yield* runSubsquid(run).pipe(
        Effect.either,
        Effect.flatMap(
          report(
            `Subsquid (evm-processor ${version(versions.processor)}, typeorm-store ${version(versions.store)}, RPC only, finality ${SQUID_FINALITY_CONFIRMATION})`
          )
        )
      )
      const ponder = yield* runPonder(run).pipe(
        Effect.either,
        Effect.flatMap(report(`Ponder ${version(versions.ponder)} cold (ponder start, disableCache)`))
      )
      return { subsquid, ponder }
    })
  )

const ratioLine = (ours: Timing, label: string, peer: Either.Either<Timing, string>, target: number) =>
  Either.match(peer, {
    onLeft: (why) => `ours (${label}) vs ${target} × — ✘ not measured: ${why}`,
    onRight: (p) => {
      const ratio = eventsPerSecond(ours) / eventsPerSecond(p)
      const steady =
        ours.seconds - ours.firstRowSeconds > 0 && p.seconds - p.firstRowSeconds > 0
          ? ` (first row to last: ${((p.seconds - p.firstRowSeconds) / (ours.seconds - ours.firstRowSeconds)).toFixed(2)} ×)`
          : ""
      return `ours (${label}) = ${ratio.toFixed(2)} × (target ≥ ${target} ×) ${ratio >= target ? "✔" : "✘"}${steady}`
    }
  })

const main = Effect.gen(function* () {
  const anvil = yield* startAnvilDevnet()
  yield* Console.log(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, node ${process.version}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`
  )
  const off = yield* pass(anvil, "off", Option.none())
  const callTracer = yield* pass(anvil, "callTracer", Option.some(off.workload))
  const { subsquid, ponder } = yield* peers(off.workload)
  yield* Console.log(
    "against the peers (events/s; in parentheses, the ratio of the times from each one's first stored row to its last):"
  )
  for (const [label, ours] of [
    ["traces off", off.timing],
    ["callTracer", callTracer.timing]
  ] as const) {
    yield* Console.log(`  vs Subsquid: ${ratioLine(ours, label, subsquid, TARGET_VS_SUBSQUID)}`)
    yield* Console.log(`  vs Ponder cold: ${ratioLine(ours, label, ponder, TARGET_VS_PONDER)}`)
  }
}).pipe(Effect.scoped)

NodeRuntime.runMain(main)
