/** How long and how hard the campaign runs: FACET_FAULTS_MODE (quick | long), FACET_FAULTS_SEED. */
export interface CampaignSettings {
  readonly mode: "quick" | "long"
  readonly seed: number
  readonly badNodeSeconds: number
  /** Share of node calls that meet a fault while faults are on. */
  readonly faultRate: number
  readonly crashes: number
  /** Crash points: checkout orders paid by the last run (dust follows PAID on some), and the share of
   * webhook deliveries the merchant's receiver fails. */
  readonly checkout: { readonly orders: number; readonly receiverFaultRate: number }
  readonly databaseFaultSeconds: number
  /** Real providers: restarts of the service, seconds of payments per run, TronGrid's ban. */
  readonly realProviders: {
    readonly restarts: number
    readonly roundSeconds: number
    readonly banSeconds: number
    readonly rescanThroughArchive: boolean
  }
  /** Where the table is written as well (FACET_FAULTS_REPORT). */
  readonly reportFile: string | undefined
}

export const campaignSettings = (): CampaignSettings => {
  const mode = process.env.FACET_FAULTS_MODE === "long" ? "long" : "quick"
  const given = Number(process.env.FACET_FAULTS_SEED)
  // quick mode (inside npm test) is fixed so CI is repeatable; the long mode explores a new seed each run
  const seed =
    Number.isInteger(given) && given > 0 ? given : mode === "quick" ? 20261123 : Math.floor(Math.random() * 2 ** 31)
  return mode === "quick"
    ? {
        mode,
        seed,
        badNodeSeconds: 15,
        faultRate: 0.3,
        // one kill of the whole service here; the money-out scenario's quick run kills it once more amid
        // placements, approvals and broadcasts (CI's budget: the long mode kills eight times)
        crashes: 1,
        checkout: { orders: 3, receiverFaultRate: 0.3 },
        databaseFaultSeconds: 8,
        realProviders: { restarts: 1, roundSeconds: 10, banSeconds: 8, rescanThroughArchive: false },
        reportFile: process.env.FACET_FAULTS_REPORT
      }
    : {
        mode,
        seed,
        badNodeSeconds: 120,
        faultRate: 0.3,
        crashes: 8,
        checkout: { orders: 8, receiverFaultRate: 0.3 },
        databaseFaultSeconds: 60,
        realProviders: { restarts: 3, roundSeconds: 40, banSeconds: 30, rescanThroughArchive: true },
        reportFile: process.env.FACET_FAULTS_REPORT
      }
}
