import { Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * One scenario's line in the campaign's table (a Schema: suites hand it to the campaign runner as JSON
 * files). `faultDetail` is the faults by kind, for the reader.
 */
export const ScenarioResult = Schema.Struct({
  scenario: Schema.String,
  faults: Schema.Number,
  faultDetail: Schema.String,
  restarts: Schema.Number,
  requestsFuzzed: Schema.Number,
  payments: Schema.Number,
  violations: Schema.Array(Schema.Struct({ invariant: Schema.String, detail: Schema.String }))
})
export type ScenarioResult = typeof ScenarioResult.Type

/** Reads a line a suite handed over (`shareResult`). */
export const readSharedResult = (file: string): ScenarioResult =>
  Schema.decodeUnknownSync(Schema.parseJson(ScenarioResult))(fs.readFileSync(file, "utf8"))

/** The campaign's table, as Markdown (docs/reliability.md shows the long mode's). */
export const resultsTable = (results: ReadonlyArray<ScenarioResult>, header: string): string => {
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.faults}${r.faultDetail === "" ? "" : ` (${r.faultDetail})`} | ${r.restarts} | ${r.requestsFuzzed} | ${r.payments} | ${r.violations.length} |`
  )
  const details = results.flatMap((r) => r.violations.map((v) => `- ${r.scenario}: **${v.invariant}** — ${v.detail}`))
  return [
    header,
    "",
    "| scenario | faults injected | restarts | requests fuzzed | payments | invariant violations |",
    "|---|---|---|---|---|---|",
    ...rows,
    ...(details.length === 0 ? [] : ["", ...details])
  ].join("\n")
}

/**
 * Hands a scenario's line to `npm run faults` (test/faults/run-campaign.ts), which prints one table for
 * every suite it ran: each suite runs in its own vitest worker, so lines meet in a directory
 * (FACET_FAULTS_RESULTS_DIR); without it (a suite run alone) nothing is written.
 */
export const shareResult = (result: ScenarioResult) => {
  const dir = process.env.FACET_FAULTS_RESULTS_DIR
  if (dir === undefined || dir === "") return
  const file = path.join(dir, `${result.scenario.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.json`)
  fs.writeFileSync(file, `${JSON.stringify(result)}\n`)
}
