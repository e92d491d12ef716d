import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Console, Effect, Layer, Logger, LogLevel, Schema } from "effect"
import { startEmbeddedPostgres } from "../../src/database/embedded-postgres.js"
import { runMigrations } from "../../src/database/migrator.js"
import { shareResult } from "../faults/scenario-result.js"
import { formatSummary, type RunSummary, runSeeds } from "./sim-report.js"
import { SimServicesLive } from "./simulation.js"

/**
 * `npm run sim -- --seeds N [--from S] [--seed S] [--off RULE,…] [--stop-at-first] [--concurrency C]`: the deterministic
 * adversarial simulation of the send lifecycle (docs/internals/simulation.md) on a throw-away embedded
 * PostgreSQL. `--seed S` replays one seed and prints every step it took; `--off refusalIsNoEvidence` (or
 * `lowestFreeNonce`) runs with that money rule switched off (SendRules). Exits 1 on any violation.
 */
const Options = Schema.Struct({
  seeds: Schema.NumberFromString.pipe(Schema.int(), Schema.positive()),
  from: Schema.NumberFromString.pipe(Schema.int(), Schema.positive()),
  seed: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.positive())),
  off: Schema.Array(Schema.Literal("refusalIsNoEvidence", "lowestFreeNonce")),
  stopAtFirst: Schema.Boolean,
  concurrency: Schema.NumberFromString.pipe(Schema.int(), Schema.positive())
})

const readOptions = Effect.suspend(() => {
  const { values } = parseArgs({
    options: {
      seeds: { type: "string", default: "100" },
      from: { type: "string", default: "1" },
      seed: { type: "string" },
      off: { type: "string", default: "" },
      "stop-at-first": { type: "boolean", default: false },
      concurrency: { type: "string", default: "2" }
    }
  })
  return Schema.decodeUnknown(Options)({
    seeds: values.seeds,
    from: values.from,
    ...(values.seed === undefined ? {} : { seed: values.seed }),
    off: values.off.split(",").filter((rule) => rule !== ""),
    stopAtFirst: values["stop-at-first"],
    concurrency: values.concurrency
  })
})

/** A throw-away PostgreSQL, migrated, as the SqlClient; gone with the scope. */
const DatabaseLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-sim-pg-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const pg = yield* Effect.orDie(startEmbeddedPostgres({ dataDir: dir, throwaway: true }))
    return PgClient.layer({ url: pg.url, maxConnections: 8 })
  })
).pipe(Layer.tap((context) => Effect.orDie(runMigrations().pipe(Effect.provide(context)))))

const main = Effect.gen(function* () {
  const options = yield* readOptions
  const rules = {
    refusalIsNoEvidence: !options.off.includes("refusalIsNoEvidence"),
    lowestFreeNonce: !options.off.includes("lowestFreeNonce")
  }
  const single = options.seed !== undefined
  const from = options.seed ?? options.from
  const count = single ? 1 : options.seeds
  const offFlag = options.off.length === 0 ? "" : ` --off ${options.off.join(",")}`
  yield* Console.log(
    `simulating seeds ${from}–${from + count - 1}, rules ${JSON.stringify(rules)}${single ? " (every step traced)" : ""}`
  )
  const summary = yield* runSeeds(
    from,
    count,
    { rules, run: 1, trace: single, keepRows: single },
    {
      stopAtFirst: options.stopAtFirst,
      concurrency: single ? 1 : options.concurrency,
      progress: (report, done) => {
        for (const v of report.violations) console.log(`seed ${v.seed} step ${v.step}: ${v.what.slice(0, 240)}`)
        if (done % 100 === 0) console.log(`${done} seeds`)
      }
    }
  )
  if (single && summary.last !== undefined) yield* Console.log(summary.last.trace.join("\n"), "\n")
  yield* Console.log(formatSummary(summary, (seed) => `npm run sim -- --seed ${seed}${offFlag}`))
  shareResult(campaignLine(summary, from))
  if (summary.violations.length > 0) process.exitCode = 1
})

/** The run's line in `npm run faults`' table (written only when the campaign runs it). */
const campaignLine = (summary: RunSummary, from: number) => {
  const sum = (keep: (move: string) => boolean) =>
    [...summary.moves].filter(([move]) => keep(move)).reduce((total, [, n]) => total + n, 0)
  const crashes = (move: string) => move.startsWith("crash")
  const top = [...summary.moves]
    .filter(([move]) => !crashes(move))
    .sort(([, a], [, b]) => b - a)
    .slice(0, 8)
  return {
    scenario: `adversarial simulation (${summary.seeds} seeds from ${from}, ${summary.steps} steps)`,
    faults: sum((move) => !crashes(move)),
    faultDetail: top.map(([move, n]) => `${move} ${n}`).join(", "),
    restarts: sum(crashes),
    requestsFuzzed: 0,
    payments: [...summary.outcomes].filter(([o]) => o.endsWith("COMPLETED")).reduce((total, [, n]) => total + n, 0),
    violations: summary.violations.map((v) => ({
      invariant: v.what.split(":")[0] ?? v.what,
      detail: `seed ${v.seed} step ${v.step}: ${v.what}`
    }))
  }
}

NodeRuntime.runMain(
  main.pipe(
    Effect.provide(SimServicesLive.pipe(Layer.provideMerge(DatabaseLive))),
    Effect.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )
)
