import { Config, Effect, Option } from "effect"
import { isNonEmptyReadonlyArray, type NonEmptyReadonlyArray } from "effect/Array"
import type { ChainEndpointsShape } from "../chains/chain-endpoints.js"
import { splitUrls } from "../chains/failover-client.js"

/**
 * The nodes the service reaches a devnet through instead of its own URL (FACET_DEVNET_VIA_<CHAIN>: one URL,
 * or several comma-separated, tried in that order as FACET_*_RPC_URLS are): proxies in front of it, as the
 * fault campaigns put hostile or rate-limited providers there. devnet.json keeps the devnets' own URLs.
 */
const viaUrls = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.map(Option.map(splitUrls)),
    Config.validate({
      message: `${name} must be one URL or several, comma-separated`,
      validation: Option.match({
        onNone: () => true,
        onSome: (urls) => urls.length > 0 && urls.every((url) => URL.canParse(url))
      })
    }),
    Config.map(Option.filter((urls): urls is NonEmptyReadonlyArray<string> => isNonEmptyReadonlyArray(urls)))
  )

export const devnetViaConfig = Config.all({
  bep20: viaUrls("FACET_DEVNET_VIA_BEP20"),
  tron: viaUrls("FACET_DEVNET_VIA_TRC20"),
  solana: viaUrls("FACET_DEVNET_VIA_SOLANA")
})

export type DevnetVia = Config.Config.Success<typeof devnetViaConfig>

/** The devnets' endpoints, each chain reached through its FACET_DEVNET_VIA_<CHAIN> nodes where set (said in a warning). */
export const reachedThrough = (endpoints: ChainEndpointsShape, via: DevnetVia) =>
  Effect.gen(function* () {
    for (const [chain, urls] of [
      ["BEP20", via.bep20],
      ["TRC20", via.tron],
      ["SOLANA", via.solana]
    ] as const) {
      if (Option.isSome(urls))
        yield* Effect.logWarning(
          `the ${chain} devnet is reached through ${urls.value.join(", ")} (FACET_DEVNET_VIA_${chain}), not directly`
        )
    }
    const nodes = (urls: Option.Option<NonEmptyReadonlyArray<string>>) =>
      Option.map(urls, ([first, ...more]) => ({ first, more }))
    const bep20 = nodes(via.bep20)
    const tron = nodes(via.tron)
    const solana = nodes(via.solana)
    return {
      bep20: Option.match(bep20, {
        onNone: () => endpoints.bep20,
        onSome: ({ first, more }) => ({ ...endpoints.bep20, rpcUrl: first, fallbackUrls: more })
      }),
      tron: Option.match(tron, {
        onNone: () => endpoints.tron,
        onSome: ({ first, more }) => ({ ...endpoints.tron, url: first, fallbackUrls: more })
      }),
      solana: Option.match(solana, {
        onNone: () => endpoints.solana,
        onSome: ({ first, more }) => ({ ...endpoints.solana, rpcUrl: first, fallbackUrls: more })
      })
    } satisfies ChainEndpointsShape
  })
