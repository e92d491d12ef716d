import "../fast-devnets.js"
// a fee above its quote is waited out briefly, a stuck send replaced soon (60 min and 90 s in production)
process.env.FACET_FEE_WAIT_MINUTES = "0.1"
process.env.FACET_FEE_BUMP_AFTER_SECONDS = "3"
// a node that holds a request forever is given up on quickly
process.env.FACET_NODE_TIMEOUT_MS = "3000"

import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive } from "../http-harness.js"
import { campaignSettings } from "./campaign-settings.js"
import { HostileNetworkLive, moneyOutScenario } from "./money-out.js"
import { moneyOutCrashesScenario } from "./money-out-crashes.js"
import { resultsTable, shareResult } from "./scenario-result.js"

/**
 * The money-out campaign (`npm run faults`: long mode, both forms; inside `npm test`: the quick, seeded
 * form of the whole service as a process, which the kills make the stronger of the two).
 */
const settings = campaignSettings()

describe.skipIf(settings.mode === "quick")(
  `money-out campaign (${settings.mode}, seed ${settings.seed}; replay with FACET_FAULTS_SEED=${settings.seed})`,
  () => {
    layer(TestAppLive({}, { chains: "devnet", network: HostileNetworkLive(settings.seed) }), {
      excludeTestServices: true,
      timeout: "600 seconds"
    })((it) => {
      it.effect(
        "withdrawals behind load-balanced lagging, pruned and re-send-refusing nodes, a gas jump, a tightened limit and racing approvers: one transfer each, payees paid exactly, ledger = chain, locked = open, policy and quorum held",
        () =>
          Effect.gen(function* () {
            const result = yield* moneyOutScenario({ withdrawals: 40 })
            shareResult(result)
            console.log(resultsTable([result], `Money-out campaign, ${settings.mode} mode, seed ${settings.seed}`))
            expect(result.violations).toEqual([])
          }),
        { timeout: 1_200_000 }
      )
    })
  }
)

describe(`money-out campaign (${settings.mode}, seed ${settings.seed}): the whole service as a process`, () => {
  it.live(
    "the same, with a withdrawal batch and a customer-claimed refund among the placements, the whole service SIGKILLed at random moments amid placements, approvals from console sessions and broadcasts, started again each time: the same invariants (locked = open withdrawals + unclaimed refunds, a refund ends with its withdrawal), nothing left running",
    () =>
      Effect.gen(function* () {
        const result = yield* moneyOutCrashesScenario(
          settings.mode === "quick"
            ? { withdrawals: 4, crashes: 1, seed: settings.seed }
            : { withdrawals: 30, crashes: 6, seed: settings.seed }
        )
        shareResult(result)
        console.log(
          resultsTable([result], `Money-out campaign with SIGKILLs, ${settings.mode} mode, seed ${settings.seed}`)
        )
        expect(result.violations).toEqual([])
      }),
    { timeout: 1_800_000 }
  )
})
