import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { readSharedResult, resultsTable } from "./scenario-result.js"

/**
 * `npm run faults`: the fault campaign (long mode unless FACET_FAULTS_MODE says otherwise) and the
 * hostile-input suites at FACET_FUZZ_RUNS, in one vitest run; in long mode then the adversarial simulation
 * (`npm run sim`, FACET_SIM_SEEDS seeds, 10,000 by default, from a first seed drawn from the campaign's);
 * then one table of every suite's line (each writes it to a shared directory) and the exit code (non-zero
 * when either failed). FACET_FAULTS_REPORT keeps the table.
 */
const SUITES = [
  "test/faults/faults.test.ts",
  "test/faults/money-out.test.ts",
  "test/faults/real-providers.test.ts",
  // every crash point of a sweep and a withdrawal (CI runs one of each)
  "custody/custody-crash.test.ts",
  "http/fuzz.test.ts",
  "http/authorization.test.ts",
  "http/hostile-input.test.ts"
]

const resultsDir = fs.mkdtempSync(path.join(os.tmpdir(), "facet-faults-results-"))
// the seed is chosen here so the table can name it (a long run explores a new one each time)
const seed = process.env.FACET_FAULTS_SEED ?? String(Math.floor(Math.random() * 2 ** 31))
const { FACET_FAULTS_REPORT: report, ...inherited } = process.env
const env = {
  ...inherited,
  FACET_FAULTS_SEED: seed,
  FACET_FAULTS_MODE: process.env.FACET_FAULTS_MODE ?? "long",
  FACET_FUZZ_RUNS: process.env.FACET_FUZZ_RUNS ?? "500",
  FACET_FAULTS_RESULTS_DIR: resultsDir
}
/** Runs a node script (or vitest) to its end: its exit code, 1 when killed by a signal. */
const run = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve) => {
    const child = spawn(process.execPath, args, { env, stdio: "inherit" })
    child.on("exit", (code) => resolve(code ?? 1))
  })

const campaign = async () => {
  const vitest = await run([path.join("node_modules", "vitest", "vitest.mjs"), "run", ...SUITES])
  const simSeeds = process.env.FACET_SIM_SEEDS ?? "10000"
  const simFrom = String((Number(seed) % 1_000_000) + 1)
  // FACET_SIM_SEEDS=0: the campaign without the simulation (run on its own with `npm run sim`)
  const simulated = env.FACET_FAULTS_MODE === "long" && simSeeds !== "0"
  const sim = simulated
    ? await run(["--import", "tsx", path.join("test", "sim", "run-sim.ts"), "--seeds", simSeeds, "--from", simFrom])
    : 0
  const results = fs
    .readdirSync(resultsDir)
    .sort()
    .map((file) => readSharedResult(path.join(resultsDir, file)))
  fs.rmSync(resultsDir, { recursive: true, force: true })
  const table = resultsTable(
    results,
    `Fault campaign, ${env.FACET_FAULTS_MODE} mode, seed ${seed} (replay: FACET_FAULTS_SEED=${seed}); every suite ${vitest === 0 ? "passed" : `did not pass (vitest exit ${vitest})`}, the hostile-input list included${simulated ? `; the simulation (${simSeeds} seeds from ${simFrom}) ${sim === 0 ? "found no violation" : "found violations (above)"}` : env.FACET_FAULTS_MODE === "long" ? "; the simulation not run (FACET_SIM_SEEDS=0)" : ""}`
  )
  console.log(`\n${table}\n`)
  if (report !== undefined) fs.writeFileSync(report, `${table}\n`)
  process.exitCode = vitest !== 0 ? vitest : sim
}

void campaign()
