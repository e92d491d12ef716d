import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { campaignSettings } from "./campaign-settings.js"
import { realProvidersScenario } from "./real-providers.js"
import { resultsTable, shareResult } from "./scenario-result.js"

/**
 * The real-providers campaign (`npm run faults`: long mode; inside `npm test`: quick, seeded): the whole
 * service behind providers' rate limits and bans, a pruned Solana ledger and BSC's 128-block state,
 * restarted while payments arrive.
 */
const settings = campaignSettings()

describe(`real providers (${settings.mode}, seed ${settings.seed}; replay with FACET_FAULTS_SEED=${settings.seed}): the whole service as a process`, () => {
  it.live(
    "rate limits and bans (another application on the same key), per-method caps, a Solana node restarted from a snapshot before an archive, BSC's 128-block state, blooms matching by chance, the service restarted: every payment credited once within the bound, no indexer halted, /health names each limit, no rescan done over slots unread",
    () =>
      Effect.gen(function* () {
        const result = yield* realProvidersScenario({ seed: settings.seed, ...settings.realProviders })
        shareResult(result)
        console.log(resultsTable([result], `Real providers, ${settings.mode} mode, seed ${settings.seed}`))
        expect(result.violations).toEqual([])
      }),
    { timeout: 1_800_000 }
  )
})
