import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"

export const AssetStatus = Schema.Literal("live", "deposit_live", "planned", "disabled")
export type AssetStatus = typeof AssetStatus.Type

/** A row of `wallet_asset_policies`: the platform catalogue, source of truth for what an asset may do. */
export const AssetPolicyRow = Schema.Struct({
  chain: Chain,
  currency: Schema.String,
  display_name: Schema.String,
  status: AssetStatus,
  decimals: Schema.Number,
  amount_precision: Schema.Number,
  gas_asset: Schema.String,
  is_native: Schema.Boolean,
  can_deposit: Schema.Boolean,
  can_collect: Schema.Boolean,
  can_withdraw: Schema.Boolean,
  default_for_new_merchants: Schema.Boolean,
  main_key_mode: Schema.String,
  receive_key_mode: Schema.String,
  collection_mode: Schema.String,
  sweep_requires_gas: Schema.Boolean,
  signing_implemented: Schema.Boolean,
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type AssetPolicyRow = typeof AssetPolicyRow.Type

/** AssetPolicy as the API shows it to one merchant. */
export const AssetPolicy = Schema.Struct({
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  display_name: Schema.String,
  main_key_mode: Schema.String,
  receive_key_mode: Schema.String,
  collection_mode: Schema.String,
  sweep_requires_gas: Schema.Boolean,
  signing_implemented: Schema.Boolean,
  status: AssetStatus,
  default_for_new_merchants: Schema.Boolean,
  merchant_enabled: Schema.Boolean,
  merchant_source: Schema.optional(Schema.String),
  decimals: Schema.Number,
  amount_precision: Schema.Number,
  gas_asset: Schema.String,
  actions: Schema.Struct({
    deposit: Schema.Boolean,
    checkout: Schema.Boolean,
    collect: Schema.Boolean,
    withdraw: Schema.Boolean
  }),
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /**
   * The merchant's underpayment tolerance for new checkout orders in this asset (set in the console; absent:
   * off): a percent of the order's amount in the asset and/or an amount in its units, both limits holding.
   */
  underpayment_tolerance: Schema.optional(
    Schema.Struct({ percent: Schema.optional(DecimalString), amount: Schema.optional(DecimalString) }).annotations({
      identifier: "UnderpaymentTolerance"
    })
  )
}).annotations({ identifier: "AssetPolicy" })
export type AssetPolicy = typeof AssetPolicy.Type

export const AssetPolicyList = Schema.Struct({ items: Schema.Array(AssetPolicy) }).annotations({
  identifier: "AssetPolicyList"
})

export const EnrollmentRequest = Schema.Struct({
  chain: Chain,
  currency: Schema.String.pipe(Schema.minLength(1)),
  source: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1)), { default: () => "merchant_api" })
}).annotations({
  identifier: "WalletAssetEnrollmentRequest",
  parseOptions: { onExcessProperty: "error", errors: "all" }
})

/** What the merchant may do with an asset: the policy's capabilities, only when live and enabled. */
export const assetActions = (policy: AssetPolicyRow, merchantEnabled: boolean) => {
  const usable = merchantEnabled && (policy.status === "live" || policy.status === "deposit_live")
  const live = merchantEnabled && policy.status === "live"
  return {
    deposit: usable && policy.can_deposit,
    checkout: live,
    collect: live && policy.can_collect,
    withdraw: live && policy.can_withdraw
  }
}
