import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"

/** GAS_FUNDING → SWEEPING → BROADCAST → COMPLETED, or FAILED at any step (nothing moved in the ledger). */
export const OperationStatus = Schema.Literal("GAS_FUNDING", "SWEEPING", "BROADCAST", "COMPLETED", "FAILED")
export type OperationStatus = typeof OperationStatus.Type

/** How a TRC20 transfer's energy is paid for: lent from the stake, or TRX burned. */
export const EnergyPath = Schema.Literal("delegated", "burned")
export type EnergyPath = typeof EnergyPath.Type

/** POST /v1/wallet-assets/{asset_key}/sweep: no other field (400). */
export const SweepRequest = Schema.Struct({
  from_wallet_id: Schema.String.pipe(Schema.minLength(1)),
  amount: Schema.optional(DecimalString)
}).annotations({ identifier: "SweepRequest", parseOptions: { onExcessProperty: "error", errors: "all" } })

/** A sweep or gas-funding operation as the API shows it (amounts in the asset's units). */
export const SweepOperation = Schema.Struct({
  operation_id: Schema.String,
  type: Schema.Literal("collection", "gas_funding"),
  status: OperationStatus,
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  from_wallet_id: Schema.String,
  from_address: Schema.String,
  to_address: Schema.String,
  amount: DecimalString,
  gas_funding: Schema.optional(
    Schema.Struct({
      operation_id: Schema.String,
      status: OperationStatus,
      tx_hash: Schema.NullOr(Schema.String),
      amount: DecimalString,
      asset: Schema.String
    })
  ),
  energy: Schema.optional(
    Schema.Struct({
      path: EnergyPath,
      reason: Schema.optional(Schema.String),
      operation_id: Schema.optional(Schema.String),
      status: Schema.optional(OperationStatus),
      stake_lent: Schema.optional(DecimalString)
    }).annotations({
      description:
        "TRON: how the transfer's energy is paid for — lent from the platform's staked TRX (delegated, with the lending operation and the TRX of stake it lends) or TRX burned (with why no energy could be had)"
    })
  ),
  tx_hash: Schema.optional(Schema.String),
  network_fee: Schema.optional(DecimalString),
  network_fee_asset: Schema.String,
  waiting_for: Schema.optional(Schema.String),
  failure_reason: Schema.optional(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({
  identifier: "SweepOperation",
  description:
    "A collection (sweep) of a receive wallet into the merchant's main wallet, or the gas funding it needed first"
})
export type SweepOperation = typeof SweepOperation.Type
