import "../fast-devnets.js"
// a BEP20 finality window deeper than the forks the bad node serves (read when the service starts)
process.env.FACET_CONFIRMATIONS_BEP20 = "6"
// a node that holds a request forever is given up on quickly
process.env.FACET_NODE_TIMEOUT_MS = "3000"

import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { TestAppLive } from "../http-harness.js"
import { BadNodesLive, badNodesScenario } from "./bad-nodes.js"
import { crashPointsScenario } from "./crash-points.js"
import { databaseFaultsScenario } from "./database-faults.js"
import { campaignSettings } from "./campaign-settings.js"
import { resultsTable, type ScenarioResult, shareResult } from "./scenario-result.js"

/**
 * The fault campaign (`npm run faults`: long mode; inside `npm test`: the quick default). Each scenario
 * returns its line of the table; a violation fails the run and is printed with its seed.
 */
const settings = campaignSettings()
const results: Array<ScenarioResult> = []

const record = (result: ScenarioResult) =>
  Effect.sync(() => {
    results.push(result)
    shareResult(result)
    const table = resultsTable(results, `Fault campaign, ${settings.mode} mode, seed ${settings.seed}`)
    if (settings.reportFile !== undefined) fs.writeFileSync(settings.reportFile, `${table}\n`)
    console.log(table)
    expect(result.violations).toEqual([])
  })

describe(`fault campaign (${settings.mode}): the whole service as a process`, () => {
  it.live(
    "crash points: SIGKILLed at random moments while payments arrive on three chains, restarted each time; nothing left running, every payment credited once",
    () =>
      Effect.flatMap(
        crashPointsScenario({ crashes: settings.crashes, seed: settings.seed, ...settings.checkout }),
        record
      ),
    { timeout: 1_800_000 }
  )
})

describe(`fault campaign (${settings.mode}): the database`, () => {
  it.live(
    "database faults: connections terminated mid-transaction and the server restarted under load; 503 meanwhile, recovery without a restart, one row per idempotency key",
    () =>
      Effect.flatMap(databaseFaultsScenario({ seconds: settings.databaseFaultSeconds, seed: settings.seed }), record),
    { timeout: 600_000 }
  )
})

describe(`fault campaign (${settings.mode}, seed ${settings.seed}; replay with FACET_FAULTS_SEED=${settings.seed})`, () => {
  layer(TestAppLive({}, { chains: "devnet", network: BadNodesLive(settings.seed) }), {
    excludeTestServices: true,
    timeout: "600 seconds"
  })((it) => {
    it.effect(
      "bad nodes: every chain's two nodes fail in every way a provider does; the indexers converge, nothing lost or invented",
      () => Effect.flatMap(badNodesScenario({ seconds: settings.badNodeSeconds, rate: settings.faultRate }), record),
      { timeout: 1_800_000 }
    )
  })
})
