import { Duration, Option } from "effect"
import type { CustodyConfigShape } from "../custody/custody-config.js"

/**
 * Custody's settings for tests that drive the lifecycle themselves: nothing automatic (no auto-sweep, no
 * energy, no token-account closing, no crash point, no price source), the devnets' gas thresholds. Each
 * test sets what it is about (poll interval, fee caps, waits) over these.
 */
export const testCustodyConfig = (): CustodyConfigShape => ({
  pollInterval: Duration.millis(50),
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
  feeCaps: {
    TRC20: { maxFee: 50_000_000n, maxGasPrice: 210n },
    BEP20: { maxFee: 2n * 10n ** 15n, maxGasPrice: 10n ** 10n },
    SOLANA: { maxFee: 10_000_000n, maxGasPrice: 5_000n }
  },
  feeWait: Duration.seconds(2),
  feeBumpAfter: Duration.days(1),
  consolidateMin: { TRC20: 1_000_000n, BEP20: 10n ** 15n },
  closeTokenAccounts: { order: false, deposit: false },
  energy: { enabled: false, stakingIndex: 0 }
})
