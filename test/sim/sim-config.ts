import { Duration, Option } from "effect"
import type { CustodyConfigShape } from "../../custody/custody-config.js"
import { FEE_CAPS } from "./workload.js"

/**
 * Custody's settings for one seed, chosen so that real time never changes a decision: the replacement of a
 * stuck EVM transfer either always due (0) or never (a day), as the seed says; the wait under a fee cap a day
 * (a capped transfer waits for the price to fall, which the healed network brings).
 */
export const simCustodyConfig = (bumpAlways: boolean): CustodyConfigShape => ({
  pollInterval: Duration.millis(1),
  gasMarginPercent: 30,
  maxGasSharePercent: 5,
  resumeAfter: Duration.minutes(1),
  gasThresholds: {
    TRC20: { low: "100", empty: "10" },
    BEP20: { low: "0.1", empty: "0.005" },
    SOLANA: { low: "0.5", empty: "0.01" }
  },
  prices: new Map(),
  priceSource: "none",
  autoSweep: new Map(),
  autoSweepInterval: Duration.minutes(1),
  crashPoint: Option.none(),
  stuckAfterMinutes: 30,
  feeCaps: FEE_CAPS,
  feeWait: Duration.days(1),
  feeBumpAfter: bumpAlways ? Duration.zero : Duration.days(1),
  consolidateMin: { TRC20: 1_000_000n, BEP20: 10n ** 15n },
  closeTokenAccounts: { order: false, deposit: false },
  energy: { enabled: false, stakingIndex: 0 }
})
