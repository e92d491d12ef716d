import { Context, Effect, Layer, Option } from "effect"
import { ChainEndpoints } from "../chains/chain-endpoints.js"
import type { AssetId } from "../domain/chain.js"

/** Per-network facts for payment URIs: token contracts / mints and the EVM chain id. */
export interface ChainSettingsShape {
  /** Contract (BEP20, TRC20) or mint (SPL) of a token asset; none for native assets or unknown tokens. */
  readonly tokenContract: (asset: AssetId) => Option.Option<string>
  readonly bep20ChainId: number
}

export class ChainSettings extends Context.Tag("facet/ChainSettings")<ChainSettings, ChainSettingsShape>() {}

export const ChainSettingsLive = Layer.effect(
  ChainSettings,
  Effect.map(
    ChainEndpoints,
    (endpoints): ChainSettingsShape => ({
      tokenContract: (asset) => {
        switch (asset.chain) {
          case "BEP20":
            return Option.fromNullable(endpoints.bep20.tokens.get(asset.currency))
          case "TRC20":
            return Option.fromNullable(endpoints.tron.tokens.get(asset.currency))
          case "SOLANA":
            return Option.map(Option.fromNullable(endpoints.solana.tokens.get(asset.currency)), (t) => t.mint)
          case "POLYGON":
            return Option.none()
        }
      },
      bep20ChainId: endpoints.bep20.chainId
    })
  )
)
