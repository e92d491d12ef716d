import { Schema } from "effect"
import { DecimalString } from "../money.js"

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
