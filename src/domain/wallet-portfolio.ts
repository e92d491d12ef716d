import { Schema } from "effect"
import { DecimalString } from "../money.js"
import { Chain } from "./chain.js"

/**
 * `ok`, `low` (a warning: top it up), `empty` (no sweep can be funded), `unknown` (the node did not answer).
 * On TRON a low TRX balance is `ok` while the platform's stake can lend a USDT transfer's energy.
 */
export const GasStatus = Schema.Literal("ok", "low", "empty", "unknown")
export type GasStatus = typeof GasStatus.Type

export const PortfolioNetwork = Schema.Struct({
  network_asset_id: Schema.String,
  chain: Chain,
  currency: Schema.String,
  main_address: Schema.String,
  total_balance: DecimalString,
  available_balance: DecimalString,
  uncollected_balance: DecimalString,
  locked_balance: DecimalString,
  gas_asset: Schema.String,
  gas_balance: DecimalString,
  gas_status: GasStatus,
  actions: Schema.Struct({ deposit: Schema.Boolean, withdraw: Schema.Boolean, collect: Schema.Boolean })
}).annotations({ identifier: "PortfolioNetwork" })

export const PortfolioAsset = Schema.Struct({
  asset_id: Schema.String,
  currency: Schema.String,
  display_name: Schema.optional(Schema.String),
  total_balance: DecimalString,
  available_balance: DecimalString,
  uncollected_balance: DecimalString,
  locked_balance: DecimalString,
  value_usdt: Schema.optional(DecimalString),
  available_value_usdt: Schema.optional(DecimalString),
  uncollected_value_usdt: Schema.optional(DecimalString),
  networks: Schema.Array(PortfolioNetwork)
}).annotations({ identifier: "PortfolioAsset" })

export const WalletPortfolio = Schema.Struct({
  quote_currency: Schema.String,
  as_of: Schema.String,
  price_source: Schema.String,
  totals: Schema.Struct({
    value_usdt: DecimalString,
    available_value_usdt: DecimalString,
    uncollected_value_usdt: DecimalString,
    locked_value_usdt: DecimalString,
    unpriced_asset_count: Schema.Number,
    network_count: Schema.Number,
    address_count: Schema.Number
  }),
  assets: Schema.Array(PortfolioAsset)
}).annotations({
  identifier: "WalletPortfolio",
  description:
    "Balances from the ledger. available_balance is collected and withdrawable; uncollected_balance is still in receive addresses; locked_balance is reserved by withdrawals. total_balance is not withdrawable."
})
export type WalletPortfolio = typeof WalletPortfolio.Type

export const PortfolioQuery = Schema.Struct({
  quote: Schema.optionalWith(
    Schema.Literal("USDT").annotations({ message: () => "quote must be USDT (the only quote currency)" }),
    { default: () => "USDT" as const }
  )
}).annotations({ parseOptions: { onExcessProperty: "ignore" } })

/** GET /v1/wallet-assets (deprecated): one row per asset key; totals are not withdrawable. */
export const WalletAssetSummary = Schema.Struct({
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  total_balance: DecimalString,
  available_balance: DecimalString,
  uncollected_balance: DecimalString,
  locked_balance: DecimalString,
  receive_wallet_count: Schema.Number
})
export const WalletAssetList = Schema.Struct({
  deprecated: Schema.Literal(true),
  successor: Schema.String,
  note: Schema.String,
  items: Schema.Array(WalletAssetSummary)
}).annotations({
  identifier: "WalletAssetList",
  description: "Deprecated: use GET /v1/wallet-portfolio. Totals here are not withdrawable balance."
})

/** GET /v1/wallet-assets/{asset_key}: the receive wallets of one asset with what they still hold. */
export const WalletAssetDetail = Schema.Struct({
  asset_key: Schema.String,
  chain: Chain,
  currency: Schema.String,
  main_address: Schema.String,
  uncollected_balance: DecimalString,
  available_balance: DecimalString,
  locked_balance: DecimalString,
  total: Schema.Number,
  limit: Schema.Number,
  items: Schema.Array(
    Schema.Struct({
      wallet_id: Schema.String,
      wallet_no: Schema.String,
      address: Schema.String,
      purpose: Schema.String,
      external_user_id: Schema.NullOr(Schema.String),
      uncollected_balance: DecimalString,
      last_tx_hash: Schema.NullOr(Schema.String),
      sweep_in_flight: Schema.NullOr(Schema.String)
    })
  )
}).annotations({ identifier: "WalletAssetDetail" })

export const WalletAssetDetailQuery = Schema.Struct({
  q: Schema.optional(Schema.String),
  limit: Schema.optionalWith(
    Schema.NumberFromString.pipe(
      Schema.int(),
      Schema.between(1, 100, { message: () => "limit must be an integer from 1 to 100" })
    ),
    { default: () => 50 }
  )
}).annotations({ parseOptions: { onExcessProperty: "ignore" } })
