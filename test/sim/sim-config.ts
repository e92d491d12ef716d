import { Duration } from "effect"
import type { CustodyConfigShape } from "../../custody/custody-config.js"
import { testCustodyConfig } from "../custody-settings.js"
import { FEE_CAPS } from "./workload.js"

/**
 * Custody's settings for one seed, chosen so that real time never changes a decision: the replacement of a
 * stuck EVM transfer either always due (0) or never (a day), as the seed says; the wait under a fee cap a day
 * (a capped transfer waits for the price to fall, which the healed network brings).
 */
export const simCustodyConfig = (bumpAlways: boolean): CustodyConfigShape => ({
  ...testCustodyConfig(),
  pollInterval: Duration.millis(1),
  feeCaps: FEE_CAPS,
  feeWait: Duration.days(1),
  feeBumpAfter: bumpAlways ? Duration.zero : Duration.days(1)
})
