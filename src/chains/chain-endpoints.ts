import { isHexAddress } from "../keys/address-encoding.js"
import { Config, ConfigError, Context, Effect, Either, Layer, Option } from "effect"
import { isNonEmptyReadonlyArray } from "effect/Array"
import type { Address } from "viem"
import { AppConfig } from "../config.js"
import { endpointLabel, splitUrls } from "./failover-client.js"

/** Where each chain is reached and which tokens count there: the devnets' own, or mainnet's from configuration. */
export interface ChainEndpointsShape {
  readonly bep20: {
    readonly rpcUrl: string
    readonly chainId: number
    readonly tokens: ReadonlyMap<string, Address>
    readonly confirmations: number
    /** How contract-sent BNB (internal calls) is seen (FACET_BEP20_TRACES); `off` credits none of it. */
    readonly traces: "callTracer" | "parity" | "off"
    /** More nodes of the same chain, used in turn when the one before fails (FACET_BEP20_RPC_URLS). */
    readonly fallbackUrls?: ReadonlyArray<string>
    /** How finality is read (FACET_BEP20_FINALITY): the node's `finalized` block with the depth as a floor, or the depth alone. */
    readonly finality?: "finalized" | "depth"
  }
  readonly tron: {
    readonly url: string
    readonly tokens: ReadonlyMap<string, string>
    readonly confirmations: number
    readonly fallbackUrls?: ReadonlyArray<string>
  }
  readonly solana: {
    readonly rpcUrl: string
    readonly tokens: ReadonlyMap<string, { readonly mint: string; readonly decimals: number }>
    readonly fallbackUrls?: ReadonlyArray<string>
  }
}

export class ChainEndpoints extends Context.Tag("facet/ChainEndpoints")<ChainEndpoints, ChainEndpointsShape>() {}

const evmToken = (name: string, fallback: string | undefined) =>
  Config.option(Config.string(name)).pipe(
    Config.map((value) => Option.orElse(value, () => Option.fromNullable(fallback))),
    Config.validate({
      message: `${name} must be a 0x-prefixed 20-byte contract address`,
      validation: (value) => Option.match(value, { onNone: () => true, onSome: isHexAddress })
    }),
    Config.map(Option.filter(isHexAddress))
  )

/**
 * A chain's nodes: `<NAME>S` (comma-separated, tried in that order) or `<NAME>` (one), else the default.
 * Setting both is refused, as one of them would be silently ignored.
 */
const nodeUrls = (name: string, fallback: string | undefined) =>
  Config.all({ one: Config.option(Config.string(name)), many: Config.option(Config.string(`${name}S`)) }).pipe(
    Config.mapOrFail(({ one, many }) => {
      if (Option.isSome(one) && Option.isSome(many))
        return Either.left(ConfigError.InvalidData([], `set ${name} or ${name}S, not both`))
      const urls = Option.isSome(many)
        ? splitUrls(many.value)
        : Option.isSome(one)
          ? [one.value]
          : fallback === undefined
            ? []
            : [fallback]
      const invalid = urls.find((url) => !URL.canParse(url))
      if (invalid !== undefined)
        return Either.left(ConfigError.InvalidData([], `${name}S: ${endpointLabel(invalid)} is not a URL`))
      return isNonEmptyReadonlyArray(urls)
        ? Either.right(urls)
        : Either.left(ConfigError.MissingData([], `${name} (or ${name}S) is required on mainnet`))
    })
  )

/** Confirmation depths per chain (docs/reference/decisions.md defaults: TRC20 19 blocks, BEP20 15; SOLANA uses finalized). */
export const confirmationsConfig = (network: "devnet" | "mainnet") =>
  Config.all({
    bep20: Config.integer("FACET_CONFIRMATIONS_BEP20").pipe(Config.withDefault(network === "mainnet" ? 15 : 3)),
    tron: Config.integer("FACET_CONFIRMATIONS_TRC20").pipe(Config.withDefault(network === "mainnet" ? 19 : 3))
  })

/** FACET_NETWORK=mainnet: real networks from configuration; no devnet is started. */
export const MainnetEndpointsLive = Layer.effect(
  ChainEndpoints,
  Effect.gen(function* () {
    yield* AppConfig
    const confirmations = yield* confirmationsConfig("mainnet")
    const urls = yield* Config.all({
      bep20: nodeUrls("FACET_BEP20_RPC_URL", undefined),
      tron: nodeUrls("FACET_TRON_API_URL", "https://api.trongrid.io"),
      solana: nodeUrls("FACET_SOLANA_RPC_URL", "https://api.mainnet-beta.solana.com")
    })
    const usdt = yield* evmToken("FACET_TOKEN_BEP20_USDT", "0x55d398326f99059fF775485246999027B3197955")
    const velnx = yield* evmToken("FACET_TOKEN_BEP20_VELNX", undefined)
    const tronUsdt = yield* Config.string("FACET_TOKEN_TRC20_USDT").pipe(
      Config.withDefault("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
    )
    const solUsdt = yield* Config.string("FACET_TOKEN_SOLANA_USDT").pipe(
      Config.withDefault("Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB")
    )
    const chainId = yield* Config.integer("FACET_BEP20_CHAIN_ID").pipe(Config.withDefault(56))
    // the operator chooses: BSC nodes serve traces only with the debug (geth) or trace (parity) namespace
    const traces = yield* Config.literal(
      "callTracer",
      "parity",
      "off"
    )("FACET_BEP20_TRACES").pipe(Config.withDefault("off" as const))
    // BSC serves fast finality's `finalized` block; the depth stays the floor when it stalls
    const finality = yield* Config.literal(
      "finalized",
      "depth"
    )("FACET_BEP20_FINALITY").pipe(Config.withDefault("finalized" as const))
    if (traces === "off") {
      yield* Effect.logWarning(
        "FACET_BEP20_TRACES=off: BNB that contracts send to deposit addresses (internal transfers) is NOT credited; set callTracer or parity if the node serves traces"
      )
    }
    return {
      bep20: {
        rpcUrl: urls.bep20[0],
        fallbackUrls: urls.bep20.slice(1),
        chainId,
        tokens: new Map([
          ...Option.toArray(Option.map(usdt, (a) => ["USDT", a] as const)),
          ...Option.toArray(Option.map(velnx, (a) => ["VELNX", a] as const))
        ]),
        confirmations: confirmations.bep20,
        traces,
        finality
      },
      tron: {
        url: urls.tron[0],
        fallbackUrls: urls.tron.slice(1),
        tokens: new Map([["USDT", tronUsdt]]),
        confirmations: confirmations.tron
      },
      solana: {
        rpcUrl: urls.solana[0],
        fallbackUrls: urls.solana.slice(1),
        tokens: new Map([["USDT", { mint: solUsdt, decimals: 6 }]])
      }
    }
  })
)
