import { NATIVE_ASSETS } from "../src/domain/chain.js"
import type { EnergyReport } from "../src/domain/energy-report.js"
import { fromBaseUnits } from "../src/money.js"
import type { EnergyStatus } from "./energy.js"

// declared in the kernel's domain: /health shows it, and the API declaration needs no custody code
export { EnergyReport } from "../src/domain/energy-report.js"

const TRX_DECIMALS = NATIVE_ASSETS.TRC20.decimals
const trx = (sun: bigint) => fromBaseUnits(sun, TRX_DECIMALS)

export const energyReport = (status: EnergyStatus): EnergyReport => ({
  staking_address: status.address,
  staked_trx: trx(status.staked),
  lent_trx: trx(status.lentOnChain),
  lendable_trx: trx(status.lendable),
  balance_trx: trx(status.balance),
  unfreezing: status.unfreezing.map((u) => ({
    amount_trx: trx(u.amount),
    available_at: new Date(u.availableAt).toISOString()
  })),
  // energy units, not money: a day's energy of the whole network (1.8e11) is far inside a double's integers
  energy_per_day: Number(status.energyLimit),
  energy_used: Number(status.energyUsed),
  bandwidth_staked_trx: trx(status.bandwidthStaked),
  bandwidth_per_day: Number(status.bandwidthLimit),
  bandwidth_used: Number(status.bandwidthUsed),
  lent_by_custody_trx: trx(status.lentByCustody),
  lendings: status.lendings,
  lending_in_flight_trx: trx(status.lendingInFlight),
  trx_burned: trx(status.trxBurned)
})

/** The stake as Prometheus gauges (TRX as decimals), for /metrics. */
export const energyMetrics = (status: EnergyStatus): ReadonlyArray<string> => {
  const metric = (name: string, help: string, value: string, type: "gauge" | "counter" = "gauge") => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    `${name} ${value}`
  ]
  return [
    ...metric(
      "facet_tron_energy_staked_trx",
      "TRX the TRON staking wallet has frozen for energy (last reading).",
      trx(status.staked)
    ),
    ...metric(
      "facet_tron_energy_lent_trx",
      "Of the staked TRX, lent to other accounts (the chain's figure).",
      trx(status.lentOnChain)
    ),
    ...metric(
      "facet_tron_energy_lendable_trx",
      "Staked TRX the chain would let custody lend now.",
      trx(status.lendable)
    ),
    ...metric(
      "facet_tron_energy_lent_by_custody_trx",
      "Staked TRX custody has lent for transfers and not yet taken back.",
      trx(status.lentByCustody)
    ),
    ...metric("facet_tron_energy_lendings", "Custody's lendings not yet taken back.", String(status.lendings)),
    ...metric(
      "facet_tron_energy_lending_in_flight_trx",
      "Staked TRX reserved by lendings not yet final.",
      trx(status.lendingInFlight)
    ),
    ...metric(
      "facet_tron_energy_daily_capacity",
      "The staking wallet's energy per 24 h.",
      status.energyLimit.toString()
    ),
    ...metric(
      "facet_tron_energy_used",
      "Of the staking wallet's energy, what is used and not yet recovered (a lending's use comes back to it).",
      status.energyUsed.toString()
    ),
    // only ever grows (the sum of custody's final TRON transactions' fees): a counter, as its _total says
    ...metric(
      "facet_tron_trx_burned_total",
      "TRX custody's TRON transactions burned for energy and bandwidth no stake paid for.",
      trx(status.trxBurned),
      "counter"
    )
  ]
}
