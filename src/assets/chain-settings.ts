import { Config, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { assetKey, type AssetId } from "../domain/chain.js"

/** Per-network facts that are configuration, not data: token contracts / mints and the EVM chain id. */
export interface ChainSettingsShape {
  /** Contract (BEP20, TRC20) or mint (SPL) of a token asset; none for native assets or unknown tokens. */
  readonly tokenContract: (asset: AssetId) => Option.Option<string>
  readonly bep20ChainId: number
}

export class ChainSettings extends Context.Tag("facet/ChainSettings")<ChainSettings, ChainSettingsShape>() {}

/** Mainnet token contracts; devnets deploy their own and configure them. */
const MAINNET_TOKENS: Record<string, string> = {
  "TRC20-USDT": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
  "BEP20-USDT": "0x55d398326f99059fF775485246999027B3197955",
  "SOLANA-USDT": "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB"
}

const TOKEN_ASSETS = ["TRC20-USDT", "BEP20-USDT", "BEP20-VELNX", "SOLANA-USDT"] as const

/** FACET_TOKEN_<CHAIN>_<CURRENCY> (e.g. FACET_TOKEN_BEP20_VELNX) overrides a token's contract or mint. */
export const ChainSettingsLive = Layer.effect(
  ChainSettings,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const tokens = new Map<string, string>()
    for (const key of TOKEN_ASSETS) {
      const configured = yield* Config.option(Config.string(`FACET_TOKEN_${key.replace("-", "_")}`))
      const fallback = config.network === "mainnet" ? Option.fromNullable(MAINNET_TOKENS[key]) : Option.none()
      const contract = Option.orElse(configured, () => fallback)
      if (Option.isSome(contract)) tokens.set(key, contract.value)
    }
    const bep20ChainId = yield* Config.integer("FACET_BEP20_CHAIN_ID").pipe(
      Config.withDefault(config.network === "mainnet" ? 56 : 31337)
    )
    return {
      tokenContract: (asset) => Option.fromNullable(tokens.get(assetKey(asset))),
      bep20ChainId
    }
  })
)
