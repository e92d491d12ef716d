import { Schema } from "effect"
import { NATIVE_ASSETS } from "../src/domain/chain.js"
import { DecimalString, fromBaseUnits } from "../src/money.js"
import type { EnergyStatus } from "./energy.js"

/**
 * The platform's TRON stake as operators read it, in TRX (decimal strings) and energy units: what
 * `npm run custody -- energy status` prints and /health shows under `custody.energy` (its last reading).
 */
export const EnergyReport = Schema.Struct({
  staking_address: Schema.String,
  /** Frozen for energy: its own use and what it lends. */
  staked_trx: DecimalString,
  /** Of that, lent to other accounts, by the chain's figures (custody's lendings and any other). */
  lent_trx: DecimalString,
  /** What the chain would let it lend now. */
  lendable_trx: DecimalString,
  /** Liquid TRX of the staking wallet (stakes are made of it; the gas wallet's, by default). */
  balance_trx: DecimalString,
  /** Unstaked TRX waiting for the chain's period (14 days on mainnet), and when each can be withdrawn. */
  unfreezing: Schema.Array(Schema.Struct({ amount_trx: DecimalString, available_at: Schema.String })),
  /** The staking account's energy per 24 h and what it has used of it (lent energy is its borrowers'). */
  energy_per_day: Schema.Number,
  energy_used: Schema.Number,
  /** Frozen for the staking wallet's own bandwidth (its lendings; the gas wallet's fundings and activations). */
  bandwidth_staked_trx: DecimalString,
  /** Its bandwidth bytes per 24 h (free and staked) and what it has used of them. */
  bandwidth_per_day: Schema.Number,
  bandwidth_used: Schema.Number,
  /** Lent by custody for transfers and not yet taken back, and how many lendings that is. */
  lent_by_custody_trx: DecimalString,
  lendings: Schema.Number,
  /** Stake reserved by lendings not yet final. */
  lending_in_flight_trx: DecimalString,
  /** TRX custody's TRON transactions burned (energy and bandwidth no stake paid for). */
  trx_burned: DecimalString
}).annotations({
  identifier: "EnergyReport",
  description: "TRON: the platform's staked TRX that lends custody's TRC20 transfers their energy"
})
export type EnergyReport = typeof EnergyReport.Type

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
