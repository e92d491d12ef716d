import { Schema } from "effect"

/** An address the service controls (a receive or main wallet) whose balance on chain is not what the ledger explains. */
export const Difference = Schema.Struct({
  address: Schema.String,
  currency: Schema.String,
  on_chain: Schema.String,
  explained: Schema.String,
  /** On chain minus explained: positive when something reached the address unrecorded. */
  difference: Schema.String,
  /** The blocks to look at (rescan): from where indexing started to the final height read. */
  from_block: Schema.String,
  to_block: Schema.String,
  /** BEP20: blocks in that range whose contract calls could not be traced: BNB they sent may be what is missing. */
  untraced_blocks: Schema.optional(Schema.Number)
})
export type Difference = typeof Difference.Type

/** A chain's latest reconciliation: when it finished and what it found. */
export const LatestRun = Schema.Struct({
  chain: Schema.String,
  finished_at: Schema.DateFromSelf,
  differences: Schema.parseJson(Schema.Array(Difference))
})
export type LatestRun = typeof LatestRun.Type
