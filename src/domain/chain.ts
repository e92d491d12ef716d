import { Schema } from "effect"

/** Every network the contract names; POLYGON only for history (sunset). */
export const Chain = Schema.Literal("TRC20", "BEP20", "POLYGON", "SOLANA").annotations({
  identifier: "Chain",
  description: "Network: TRC20 (TRON), BEP20 (BNB Smart Chain), SOLANA; POLYGON is sunset"
})
export type Chain = typeof Chain.Type

/** An asset is a currency on a chain; its key is `CHAIN-CURRENCY`. */
export interface AssetId {
  readonly chain: Chain
  readonly currency: string
}

export const assetKey = (asset: AssetId): string => `${asset.chain}-${asset.currency}`

export const AssetKey = Schema.String.pipe(
  Schema.pattern(/^[A-Z0-9]+-[A-Z0-9]+$/, { message: () => "asset_key must look like CHAIN-CURRENCY, e.g. TRC20-USDT" })
).annotations({ identifier: "AssetKey" })

/** Each network's native (gas) asset: what fees are paid in, with its decimals on chain. */
export const NATIVE_ASSETS: Record<Chain, { readonly currency: string; readonly decimals: number }> = {
  TRC20: { currency: "TRX", decimals: 6 },
  BEP20: { currency: "BNB", decimals: 18 },
  SOLANA: { currency: "SOL", decimals: 9 },
  POLYGON: { currency: "POL", decimals: 18 }
}
