import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { asRecord } from "../test/json.js"
import { api, processWorkDir, startService, withServiceDatabase } from "../test/service-process.js"
import { ledgerExportStatement } from "../src/stores/ledger-store.js"
import { loadAverage, machine } from "./bench-environment.js"

/**
 * The ledger export at a year of an exchange's volume (issue #35 part 5): `npm start` as its own process on
 * a fresh embedded database, one merchant given `--transfers` (1,000,000) ledger transfers over 2025 in one
 * INSERT … SELECT (a realistic mix: deposits into 10,000 receive wallets with their transactions rows,
 * collections, withdrawals with their platform fees), then `GET /v1/ledger-export` for the whole year
 * streamed over HTTP and counted as it arrives (never kept): rows, wall time, rows/s, MB/s, and the server
 * process's resident memory (from /proc, every 100 ms) and JS heap (its /metrics, every 250 ms) before and
 * at their peak during the export. The last balances in the file are checked against the ledger's.
 */

const { values: options } = parseArgs({
  options: {
    transfers: { type: "string", default: "1000000" },
    format: { type: "string", default: "csv" },
    // prints the export statement's plan with its timings (EXPLAIN ANALYZE) before the export
    explain: { type: "boolean", default: false }
  }
})
const TRANSFERS = Number(options.transfers)
const FORMAT = options.format === "json" ? "json" : "csv"
const WALLETS = 10_000
const BENCH_ACCOUNT = 999_998

const log = (line: string) => Effect.sync(() => console.log(line))
const seconds = (ms: number) => (ms / 1000).toFixed(1)
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1)

/** Resident memory of a process now, in bytes, from /proc. */
const rssOf = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? 0) * 1024
}

/** The node process behind the service (`service.pid` may be its wrapper): the one running src/main.ts. */
const nodePidOf = (pid: number): number => {
  const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
  if (cmdline.includes("src/main.ts")) return pid
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).map(Number)
  return children.map(nodePidOf).find((p) => p > 0) ?? pid
}

const program = Effect.gen(function* () {
  yield* log(`machine: ${machine()}; load ${loadAverage()}`)
  const dir = yield* processWorkDir("facet-ledger-export-bench-")
  const dataDir = path.join(dir, "data")
  const service = yield* startService(dataDir, "service", { FACET_INDEXER_CHAINS: "none" }, "as npm start")
  const serverPid = nodePidOf(service.pid)
  const applied = asRecord(
    (yield* api(service, "POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: `Ledger export bench ${Date.now()}`,
        business_type: "exchange",
        use_case: "accounting export",
        agree_terms: true,
        integration_mode: "exchange_wallet"
      }
    })).body
  )
  const env = asRecord(applied.env)
  const apiKey = String(env.FACET_API_KEY)
  const merchantId = String(env.FACET_MERCHANT_ID)

  // one block of ten transfers per step k: 4 deposits of 1 USDT into wallet k % WALLETS (each with its
  // transactions row), 3 collections of 1 USDT to available, a 2 USDT withdrawal locked, sent (1.99) and its
  // 0.01 platform fee. Every 31.5 s over 2025: a year.
  let started = Date.now()
  yield* withServiceDatabase(
    dataDir,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`
        INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
        SELECT 'wal_bench_' || lpad(i::text, 14, '0'), '${merchantId}', 'receive', 'order', 'TRC20', 'TRON',
               'Tbench' || lpad(i::text, 28, '0'), 'm/bench/' || i, ${BENCH_ACCOUNT}, i
        FROM generate_series(1, ${WALLETS}) i`)
      yield* sql.unsafe(`
        CREATE TEMP TABLE bench_moves AS
        SELECT n, k, p, 'wal_bench_' || lpad((k % ${WALLETS} + 1)::text, 14, '0') AS wallet,
               timestamptz '2025-01-01 00:00:00Z' + n * interval '31.5 seconds' AS at
        FROM (SELECT n, n / 10 AS k, n % 10 AS p FROM generate_series(0, ${TRANSFERS - 1}) n) s`)
      yield* sql.unsafe(`
        INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index,
                                  from_address, to_address, block_number, confirmations, wallet_id, created_at, updated_at)
        SELECT 'txn_bench_' || n, '${merchantId}', 'deposit', 'confirmed', 'TRC20', 'USDT', 1, md5(n::text) || md5((n + 1)::text), 0,
               'Tcustomer', 'Tbench' || lpad(substr(wallet, 11)::int::text, 28, '0'), 1000 + n, 19, wallet, at, at
        FROM bench_moves WHERE p < 4`)
      yield* sql.unsafe(`
        INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference, created_at)
        SELECT CASE WHEN p < 4 THEN 'chain' WHEN p < 7 THEN 'uncollected:' || wallet
                    WHEN p = 7 THEN 'available:${merchantId}' ELSE 'locked:${merchantId}' END,
               CASE WHEN p < 4 THEN 'uncollected:' || wallet WHEN p < 7 THEN 'available:${merchantId}'
                    WHEN p = 7 THEN 'locked:${merchantId}' WHEN p = 8 THEN 'chain' ELSE 'fees' END,
               'TRC20', 'USDT',
               CASE WHEN p < 7 THEN 1000000 WHEN p = 7 THEN 2000000 WHEN p = 8 THEN 1990000 ELSE 10000 END,
               CASE WHEN p < 4 THEN 'deposit' WHEN p < 7 THEN 'collection' WHEN p = 7 THEN 'withdrawal_lock'
                    WHEN p = 8 THEN 'withdrawal' ELSE 'platform_fee' END,
               CASE WHEN p < 4 THEN 'txn_bench_' || n WHEN p < 7 THEN 'op_bench_' || n ELSE 'wdr_bench_' || k END,
               at
        FROM bench_moves ORDER BY n`)
      // the accounts' posted totals, as the ledger keeps them beside its transfers
      yield* sql.unsafe(`
        INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, wallet_id, debits_posted, credits_posted)
        SELECT s.account, 'TRC20', 'USDT', split_part(s.account, ':', 1),
               CASE WHEN s.account IN ('chain', 'fees') THEN NULL ELSE '${merchantId}' END,
               CASE WHEN s.account LIKE 'uncollected:%' THEN substr(s.account, 13) END, sum(s.debit), sum(s.credit)
        FROM (SELECT debit_account AS account, amount AS debit, 0 AS credit FROM ledger_transfers
              UNION ALL SELECT credit_account, 0, amount FROM ledger_transfers) s
        GROUP BY s.account`)
      yield* sql.unsafe("ANALYZE")
    })
  )
  yield* log(
    `setup: ${TRANSFERS.toLocaleString()} ledger transfers (${WALLETS.toLocaleString()} receive wallets, ${(TRANSFERS * 0.4).toLocaleString()} transactions rows) seeded in ${seconds(Date.now() - started)} s`
  )

  if (options.explain) {
    const { query } = ledgerExportStatement(
      { merchantId, from: new Date("2025-01-01T00:00:00Z"), to: new Date("2026-01-01T00:00:00Z") },
      FORMAT
    )
    const plan = yield* withServiceDatabase(
      dataDir,
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql.unsafe("SET work_mem = '256MB'"),
          sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${query}`)
        )
      )
    )
    yield* log(plan.map((row) => row["QUERY PLAN"]).join("\n"))
  }

  // the server's memory, sampled while the export streams
  const samples = { rss: [] as Array<number>, heap: [] as Array<number> }
  const heapNow = Effect.promise(async () => {
    const metrics = await (await fetch(`${service.url}/metrics`)).text()
    return Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(metrics)?.[1] ?? 0)
  })
  const rssBefore = rssOf(serverPid)
  const heapBefore = yield* heapNow
  let exporting = true
  const sampler = yield* Effect.fork(
    Effect.gen(function* () {
      let tick = 0
      while (exporting) {
        samples.rss.push(rssOf(serverPid))
        if (tick % 3 === 0) samples.heap.push(yield* heapNow)
        tick += 1
        yield* Effect.sleep("100 millis")
      }
    })
  )

  started = Date.now()
  let firstByte = 0
  const counted = yield* Effect.promise(async () => {
    const response = await fetch(
      `${service.url}/v1/ledger-export?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&format=${FORMAT}`,
      { headers: { "x-api-key": apiKey } }
    )
    if (response.body === null || response.status !== 200) throw new Error(`export answered ${response.status}`)
    let lines = 0
    let bytes = 0
    let tail = ""
    const decoder = new TextDecoder()
    for await (const chunk of response.body) {
      if (firstByte === 0) firstByte = Date.now()
      bytes += chunk.byteLength
      for (const byte of chunk) if (byte === 10) lines += 1
      // the end of the file, for the balances check
      tail = (tail + decoder.decode(chunk, { stream: true })).slice(-100_000)
    }
    return { lines, bytes, tail }
  })
  const wall = Date.now() - started
  exporting = false
  yield* sampler.await
  const rows = counted.lines - (FORMAT === "csv" ? 1 : 0)
  yield* log(
    `export (${FORMAT}, 2025, one merchant): ${rows.toLocaleString()} rows, ${mb(counted.bytes)} MB in ${seconds(wall)} s = ${Math.round(rows / (wall / 1000)).toLocaleString()} rows/s, ${(counted.bytes / 2 ** 20 / (wall / 1000)).toFixed(1)} MB/s; first byte after ${seconds(firstByte - started)} s`
  )
  yield* log(
    `server memory: RSS ${mb(rssBefore)} MB before, peak ${mb(Math.max(...samples.rss))} MB during (${samples.rss.length} samples); JS heap used ${mb(heapBefore)} MB before, peak ${mb(Math.max(...samples.heap))} MB during (${samples.heap.length} samples); load ${loadAverage()}`
  )

  // the last available balance in the file is the ledger's
  const lastAvailable =
    FORMAT === "csv"
      ? counted.tail
          .split("\n")
          .filter((l) => l.includes(`,available:${merchantId},`))
          .at(-1)
          ?.split(",")[11]
      : counted.tail
          .split("\n")
          .slice(1, -1) // the first may be cut; the last is empty
          .map((l) => asRecord(JSON.parse(l)))
          .filter((row) => row.account === `available:${merchantId}`)
          .map((row) => String(row.balance_after))
          .at(-1)
  const ledger = yield* withServiceDatabase(
    dataDir,
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(
        sql<{
          available: string
        }>`SELECT available::text AS available FROM merchant_balances WHERE merchant_id = ${merchantId}`,
        (r) => r[0]?.available ?? ""
      )
    )
  )
  yield* log(
    `check: the file's last available balance ${lastAvailable} = the ledger's ${ledger}: ${lastAvailable === ledger}`
  )
  if (lastAvailable !== ledger) return yield* Effect.dieMessage("the export's running balance is not the ledger's")

  // a client that goes away midway: its COPY connection ends and its turn is given back
  const exportConnections = withServiceDatabase(
    dataDir,
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'facet-export'`,
        (r) => r[0]?.n ?? 0
      )
    )
  )
  const abortedAt = yield* Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(
      `${service.url}/v1/ledger-export?from=2025-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&format=${FORMAT}`,
      { headers: { "x-api-key": apiKey }, signal: controller.signal }
    )
    let bytes = 0
    try {
      for await (const chunk of response.body ?? []) {
        bytes += chunk.byteLength
        if (bytes > 1_000_000) controller.abort()
      }
    } catch {
      // aborted
    }
    return Date.now()
  })
  let open = yield* exportConnections
  while (open > 0 && Date.now() - abortedAt < 30_000) {
    yield* Effect.sleep("100 millis")
    open = yield* exportConnections
  }
  const day = yield* Effect.promise(async () => {
    const started = Date.now()
    const response = await fetch(`${service.url}/v1/ledger-export?from=2025-06-01&to=2025-06-02&format=${FORMAT}`, {
      headers: { "x-api-key": apiKey }
    })
    const lines = (await response.text()).split("\n").length - 1
    return { status: response.status, lines, ms: Date.now() - started }
  })
  yield* log(
    `abandoned midway (after 1 MB): its database connection gone after ${seconds(Date.now() - abortedAt)} s (${open} left); then one day's export: ${day.status}, ${day.lines} lines in ${seconds(day.ms)} s`
  )
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
