import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Fiber, Schema } from "effect"
import * as os from "node:os"
import { parseArgs } from "node:util"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { asRecord } from "../test/json.js"
import { api, processWorkDir, readDevnetFile, type ServiceProcess, startService } from "../test/service-process.js"
import { percentile } from "./bench-environment.js"

/**
 * Load and soak: `npm start` as a process (embedded PostgreSQL, the three devnets at npm start's block
 * times), and an open-loop client that creates orders and deposit addresses at a fixed rate whatever the
 * answers' speed (latency counts from the moment a request was due, so a slow service is not hidden by
 * a client that waits). Several merchants share the rate, each under its per-key rate limit, as real
 * traffic would. Meanwhile a customer pays deposit addresses on all three chains, so the indexers
 * follow under load, and at the end every payment must be credited. Memory is read from /metrics.
 *
 *   npm run bench:load -- --rate 60 --seconds 60        (the default)
 *   npm run bench:load -- --rate 60 --minutes 30        (the soak)
 */
const Options = Schema.Struct({
  rate: Schema.NumberFromString.pipe(Schema.positive()),
  seconds: Schema.NumberFromString.pipe(Schema.positive()),
  payEveryMs: Schema.NumberFromString.pipe(Schema.positive()),
  perMerchant: Schema.NumberFromString.pipe(Schema.positive())
})

const readOptions = Effect.suspend(() => {
  const { values } = parseArgs({
    options: {
      rate: { type: "string", default: "60" },
      seconds: { type: "string" },
      minutes: { type: "string" },
      "pay-every-ms": { type: "string", default: "2000" },
      "per-merchant": { type: "string", default: "15" }
    }
  })
  const seconds = values.minutes !== undefined ? String(Number(values.minutes) * 60) : (values.seconds ?? "60")
  return Schema.decodeUnknown(Options)({
    rate: values.rate,
    seconds,
    payEveryMs: values["pay-every-ms"],
    perMerchant: values["per-merchant"]
  })
})

const CHAINS = [
  ["TRC20", "TRC20-USDT"],
  ["BEP20", "BEP20-USDT"],
  ["SOLANA", "SOLANA-USDT"]
] as const

interface Sample {
  readonly kind: "order" | "deposit_address"
  readonly status: number
  /** From the moment the request was due (open loop), in ms. */
  readonly latencyMs: number
}

interface MemorySample {
  readonly atSeconds: number
  readonly rss: number
  readonly heapUsed: number
  readonly lagBlocks: Record<string, number>
  /** Addresses the indexers follow (all chains): the watch list grows with every address created. */
  readonly watched: number
}

/** The service's API, a request that got no answer (connection refused or reset) counted as status 0. */
const call = (service: ServiceProcess, method: string, url: string, apiKey: string | undefined, json?: unknown) =>
  api(service, method, url, {
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(json === undefined ? {} : { json })
  }).pipe(Effect.catchAllDefect(() => Effect.succeed({ status: 0, body: undefined })))

const metricValue = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN)

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

const program = Effect.gen(function* () {
  const options = yield* readOptions
  const dataDir = `${yield* processWorkDir("facet-load-")}/data`
  console.log(
    `load: ${options.rate} requests/s for ${options.seconds} s (half orders on TRON and BEP20, half deposit addresses on the three chains), a payment every ${options.payEveryMs} ms; starting the service…`
  )
  const service = yield* startService(dataDir, "service", {}, "as npm start")
  const devnets = yield* readDevnetFile(dataDir)

  // merchants enough that none exceeds its rate limit
  const merchantCount = Math.ceil(options.rate / options.perMerchant)
  const keys: Array<string> = []
  for (let m = 0; m < merchantCount; m++) {
    const applied = yield* call(service, "POST", "/v1/ai/merchant-apply", undefined, {
      project_name: `Load ${m}`,
      business_type: "shop",
      use_case: "load bench",
      agree_terms: true,
      contact_email: `load-${m}@bench.example`
    })
    if (applied.status !== 201 && applied.status !== 200)
      return yield* Effect.dieMessage(`onboarding answered ${applied.status}: ${JSON.stringify(applied.body)}`)
    keys.push(String(asRecord(asRecord(applied.body).env).FACET_API_KEY))
  }

  const samples: Array<Sample> = []
  const memory: Array<MemorySample> = []
  const payable: Array<{ chain: string; asset: string; address: string }> = []
  const payments: Array<{ chain: string; txHash: string }> = []
  const firstErrors = new Map<string, string>()
  let payFailures = 0
  let inFlight = 0
  let peakInFlight = 0
  const started = performance.now()
  const totalRequests = Math.floor(options.rate * options.seconds)

  const request = (i: number, due: number) => {
    // six requests in a row to one merchant cover both kinds on the three chains
    const merchant = Math.floor(i / 6) % keys.length
    const key = keys[merchant] ?? ""
    const kind: Sample["kind"] = i % 2 === 0 ? "order" : "deposit_address"
    // checkout orders take live assets only (Solana's USDT is deposit_live): orders alternate TRON and BEP20
    const [chain, asset] =
      (kind === "order" ? CHAINS.slice(0, 2) : CHAINS)[Math.floor(i / 2) % (kind === "order" ? 2 : 3)] ?? CHAINS[0]
    const effect =
      kind === "order"
        ? call(service, "POST", "/v1/orders", key, {
            amount: `${10 + (i % 90)}.${String(i % 100).padStart(2, "0")}`,
            chain,
            currency: "USDT",
            out_trade_no: `load-${i}`
          })
        : call(service, "POST", "/v1/deposit-addresses", key, {
            external_user_id: `load-user-${i}`,
            chain,
            currency: "USDT"
          })
    return Effect.map(effect, (answer) => {
      samples.push({ kind, status: answer.status, latencyMs: performance.now() - due })
      if (answer.status >= 400 && !firstErrors.has(`${kind} ${answer.status}`))
        firstErrors.set(`${kind} ${answer.status}`, JSON.stringify(answer.body))
      // the first merchant's addresses are the ones the customer pays
      if (kind === "deposit_address" && answer.status === 201 && merchant === 0)
        payable.push({ chain, asset, address: String(asRecord(answer.body).address) })
    })
  }

  const load = Effect.gen(function* () {
    const fibers: Array<Fiber.RuntimeFiber<void>> = []
    for (let i = 0; i < totalRequests; i++) {
      const due = started + (i * 1000) / options.rate
      const wait = due - performance.now()
      if (wait > 0) yield* Effect.sleep(`${Math.ceil(wait)} millis`)
      inFlight += 1
      peakInFlight = Math.max(peakInFlight, inFlight)
      fibers.push(
        yield* Effect.fork(
          Effect.ensuring(
            request(i, due),
            Effect.sync(() => (inFlight -= 1))
          )
        )
      )
      if (fibers.length > 1000) yield* Fiber.joinAll(fibers.splice(0, 500))
    }
    yield* Fiber.joinAll(fibers)
  })

  const pay = Effect.gen(function* () {
    let n = 0
    while (performance.now() - started < options.seconds * 1000) {
      yield* Effect.sleep(`${options.payEveryMs} millis`)
      const target = payable[n % Math.max(1, payable.length)]
      n += 1
      if (target === undefined) continue
      const paid = yield* Effect.either(
        payFromCustomer(devnets, target.asset, target.address, `1.${String(n % 100).padStart(2, "0")}`)
      )
      if (Either.isRight(paid)) payments.push({ chain: target.chain, txHash: paid.right })
      else payFailures += 1
    }
  })

  const sample = Effect.gen(function* () {
    const metrics = yield* Effect.promise(() =>
      fetch(`${service.url}/metrics`).then(
        (r) => r.text(),
        () => ""
      )
    )
    const health = asRecord((yield* call(service, "GET", "/health", undefined)).body)
    const lagBlocks: Record<string, number> = {}
    let watched = 0
    for (const indexer of Array.isArray(health.indexers) ? health.indexers : []) {
      const record = asRecord(indexer)
      lagBlocks[String(record.chain)] = Number(record.lag_blocks)
      watched += Number(record.watched_addresses)
    }
    memory.push({
      atSeconds: (performance.now() - started) / 1000,
      rss: metricValue(metrics, "process_resident_memory_bytes"),
      heapUsed: metricValue(metrics, "nodejs_heap_size_used_bytes"),
      lagBlocks,
      watched
    })
  })

  const progress = Effect.gen(function* () {
    for (;;) {
      yield* Effect.sleep("10 seconds")
      yield* sample
      const last = memory[memory.length - 1]
      const elapsed = (performance.now() - started) / 1000
      if (Math.round(elapsed) % 60 < 10 || options.seconds <= 120) {
        const recent = samples.slice(-Math.round(options.rate * 60)).map((s) => s.latencyMs)
        console.log(
          `  ${elapsed.toFixed(0)} s: ${samples.length} answered, p99 last minute ${percentile(recent, 99).toFixed(0)} ms, in flight ${inFlight}; service RSS ${mib(last?.rss ?? 0)} MiB, heap ${mib(last?.heapUsed ?? 0)} MiB; indexer lag ${JSON.stringify(last?.lagBlocks ?? {})}; ${payments.length} payments`
        )
      }
    }
  })

  yield* sample
  const progressFiber = yield* Effect.fork(progress)
  yield* Effect.all([load, pay], { concurrency: 2 })
  const loadEnded = performance.now()
  yield* Fiber.interrupt(progressFiber)
  yield* sample

  // every payment credited: the first merchant's confirmed deposits, page by page
  const payerKey = keys[0] ?? ""
  const expected = new Set(payments.map((p) => p.txHash.toLowerCase()))
  const credited = new Set<string>()
  const creditDeadline = performance.now() + 180_000
  while (performance.now() < creditDeadline && [...expected].some((h) => !credited.has(h))) {
    for (let offset = 0; ; offset += 100) {
      const page = asRecord(
        (yield* call(
          service,
          "GET",
          `/v1/transactions?type=deposit&status=confirmed&limit=100&offset=${offset}`,
          payerKey
        )).body
      )
      const items = Array.isArray(page.items) ? page.items : []
      for (const item of items) credited.add(String(asRecord(item).tx_hash).toLowerCase())
      if (items.length < 100) break
      yield* Effect.sleep("100 millis")
    }
    yield* Effect.sleep("2 seconds")
  }
  const creditedAfterSeconds = (performance.now() - loadEnded) / 1000
  const missing = [...expected].filter((h) => !credited.has(h))

  // the figures
  const wall = (loadEnded - started) / 1000
  const row = (kind: Sample["kind"] | "all") => {
    const mine = kind === "all" ? samples : samples.filter((s) => s.kind === kind)
    const latencies = mine.map((s) => s.latencyMs)
    const count = (test: (status: number) => boolean) => mine.filter((s) => test(s.status)).length
    return `| ${kind} | ${mine.length} | ${(mine.length / wall).toFixed(1)} | ${count((s) => s >= 200 && s < 300)} | ${count((s) => s === 429)} | ${count((s) => s >= 400 && s < 500 && s !== 429)} | ${count((s) => s >= 500)} | ${count((s) => s === 0)} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 90).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} | ${Math.max(0, ...latencies).toFixed(0)} |`
  }
  const cpus = os.cpus()
  console.log("")
  console.log(
    `machine: ${cpus.length} × ${cpus[0]?.model ?? "?"}, ${mib(os.totalmem())} MiB, Node ${process.version}; service, its PostgreSQL, the devnets and this client on the same machine`
  )
  console.log(
    `offered ${options.rate} requests/s for ${wall.toFixed(0)} s over ${keys.length} merchants (≤ ${options.perMerchant}/s each); peak in flight ${peakInFlight}`
  )
  console.log("")
  console.log(
    "| requests | sent | per second | 2xx | 429 | other 4xx | 5xx | no answer | p50 ms | p90 ms | p99 ms | max ms |"
  )
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|")
  console.log(row("order"))
  console.log(row("deposit_address"))
  console.log(row("all"))
  for (const [what, body] of firstErrors) console.log(`first ${what}: ${body.slice(0, 300)}`)
  console.log("")
  console.log(
    `payments on three chains during the load: ${payments.length} sent (${payFailures} the devnet refused), ${payments.length - missing.length} credited, ${missing.length} not credited ${creditedAfterSeconds.toFixed(0)} s after the load ended${missing.length === 0 ? "" : `: ${missing.slice(0, 5).join(", ")}`}`
  )
  const maxLag: Record<string, number> = {}
  for (const m of memory)
    for (const [chain, lag] of Object.entries(m.lagBlocks)) maxLag[chain] = Math.max(maxLag[chain] ?? 0, lag)
  console.log(
    `indexer lag, most blocks behind at any sample (every 10 s): ${Object.entries(maxLag)
      .map(([c, l]) => `${c} ${l}`)
      .join(", ")}`
  )
  // memory: the median of each window (a periodic job, such as the reconciliation every 10 minutes, makes
  // short peaks that a single sample would mistake for a trend), with the watch list beside it
  const windowSeconds = wall >= 600 ? 300 : 60
  const median = (values: ReadonlyArray<number>) => percentile(values, 50)
  const windows: Array<{ from: number; rss: number; heap: number; watched: number }> = []
  for (let from = 0; from < wall; from += windowSeconds) {
    const inside = memory.filter((m) => m.atSeconds >= from && m.atSeconds < from + windowSeconds)
    if (inside.length > 0)
      windows.push({
        from,
        rss: median(inside.map((m) => m.rss)),
        heap: median(inside.map((m) => m.heapUsed)),
        watched: Math.max(...inside.map((m) => m.watched))
      })
  }
  console.log(
    `service memory, median per ${windowSeconds} s window (samples every 10 s; RSS includes the in-process TRON and Solana devnets):`
  )
  console.log("| from s | RSS MiB | heap used MiB | addresses followed |")
  console.log("|---|---|---|---|")
  for (const w of windows) console.log(`| ${w.from} | ${mib(w.rss)} | ${mib(w.heap)} | ${w.watched} |`)
  const second = windows[1]
  const lastWindow = windows[windows.length - 1]
  if (
    second !== undefined &&
    lastWindow !== undefined &&
    lastWindow !== second &&
    lastWindow.watched > second.watched
  ) {
    const perAddress = (lastWindow.heap - second.heap) / (lastWindow.watched - second.watched)
    console.log(
      `from the second window to the last: heap ${perAddress >= 0 ? "+" : ""}${mib(lastWindow.heap - second.heap)} MiB for ${lastWindow.watched - second.watched} more addresses followed (${perAddress.toFixed(0)} bytes per address), RSS ${lastWindow.rss >= second.rss ? "+" : ""}${mib(lastWindow.rss - second.rss)} MiB`
    )
  }
  if (missing.length > 0) return yield* Effect.dieMessage(`${missing.length} payments were not credited`)
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
