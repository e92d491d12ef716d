import { Effect } from "effect"
import { runSeed, type SeedReport, type SimSettings, type Violation } from "./simulation.js"

/** What a run of many seeds found and exercised, summed. */
export interface RunSummary {
  readonly seeds: number
  readonly seconds: number
  readonly steps: number
  readonly violations: ReadonlyArray<Violation>
  /** The reports of the seeds that violated something (their traces), the first few. */
  readonly failing: ReadonlyArray<SeedReport>
  /** The last seed's report (a replay's trace). */
  readonly last: SeedReport | undefined
  readonly moves: ReadonlyMap<string, number>
  readonly outcomes: ReadonlyMap<string, number>
}

const add = (into: Map<string, number>, from: ReadonlyMap<string, number>) => {
  for (const [key, n] of from) into.set(key, (into.get(key) ?? 0) + n)
}

/**
 * Runs seeds `from` … `from + count - 1`, `concurrency` at a time (each seed alone on its rows and its own
 * scheduler: running two at once changes no seed's steps, only the pace, as PostgreSQL then has a core of its
 * own while the other seed waits for it), or until `stopAtFirst` and a seed violated something (`stopWhen`
 * says which violations count; any by default); `progress` is told after each seed.
 */
export const runSeeds = (
  from: number,
  count: number,
  settings: SimSettings,
  options: {
    readonly stopAtFirst: boolean
    readonly concurrency: number
    readonly stopWhen?: (violation: Violation) => boolean
    readonly progress?: (report: SeedReport, done: number) => void
  }
) =>
  Effect.gen(function* () {
    const started = Date.now()
    const moves = new Map<string, number>()
    const outcomes = new Map<string, number>()
    const violations: Array<Violation> = []
    const failing: Array<SeedReport> = []
    let steps = 0
    let seeds = 0
    let last: SeedReport | undefined
    const stops = options.stopWhen ?? (() => true)
    const one = (seed: number) =>
      Effect.gen(function* () {
        if (options.stopAtFirst && violations.some(stops)) return
        const report = yield* runSeed(seed, settings)
        seeds += 1
        steps += report.steps
        last = report
        add(moves, report.moves)
        add(outcomes, report.outcomes)
        violations.push(...report.violations)
        if (report.violations.length > 0 && failing.length < 3) failing.push(report)
        options.progress?.(report, seeds)
      })
    const all = Array.from({ length: count }, (_, i) => from + i)
    yield* Effect.forEach(all, one, { concurrency: options.concurrency, discard: true })
    violations.sort((a, b) => a.seed - b.seed || a.step - b.step)
    failing.sort((a, b) => a.seed - b.seed)
    return {
      seeds,
      seconds: (Date.now() - started) / 1000,
      steps,
      violations,
      failing,
      last,
      moves,
      outcomes
    } satisfies RunSummary
  })

const table = (title: string, rows: ReadonlyMap<string, number>) =>
  [
    `| ${title} | times |`,
    "|---|---|",
    ...[...rows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `| ${name} | ${n} |`)
  ].join("\n")

/** The run in words: pace, violations (each replayable), a failing seed's last steps, the tables. */
export const formatSummary = (summary: RunSummary, replay: (seed: number) => string) => {
  const perMinute = summary.seconds === 0 ? 0 : (summary.seeds * 60) / summary.seconds
  const lines = [
    `${summary.seeds} seeds, ${summary.steps} steps in ${summary.seconds.toFixed(1)} s: ${perMinute.toFixed(1)} seeds/min`,
    summary.violations.length === 0
      ? "no violation"
      : `${summary.violations.length} violation(s) in ${new Set(summary.violations.map((v) => v.seed)).size} seed(s):`,
    ...summary.violations
      .slice(0, 40)
      .map((v) => `  seed ${v.seed} step ${v.step}: ${v.what}  (replay: ${replay(v.seed)})`)
  ]
  const first = summary.failing[0]
  if (first !== undefined)
    lines.push("", `seed ${first.seed}, its last steps:`, ...first.trace.map((line) => `  ${line}`))
  lines.push("", table("adversary move / crash point", summary.moves), "", table("operation outcome", summary.outcomes))
  return lines.join("\n")
}
