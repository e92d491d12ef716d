import * as fs from "node:fs"
import * as path from "node:path"
import type { Violation } from "./invariants.js"

/** One scenario's line in the campaign's table. */
export interface ScenarioResult {
  readonly scenario: string
  readonly faults: number
  /** The faults by kind, for the reader. */
  readonly faultDetail: string
  readonly restarts: number
  readonly requestsFuzzed: number
  readonly payments: number
  readonly violations: ReadonlyArray<Violation>
}

/** The campaign's table, as Markdown (the README shows the long mode's). */
export const resultsTable = (results: ReadonlyArray<ScenarioResult>, header: string): string => {
  const rows = results.map((r) =>
    `| ${r.scenario} | ${r.faults}${r.faultDetail === "" ? "" : ` (${r.faultDetail})`} | ${r.restarts} | ${r.requestsFuzzed} | ${r.payments} | ${r.violations.length} |`)
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
