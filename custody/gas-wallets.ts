import { Effect, Layer, Option, Ref, Schedule } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import type { GasStatus } from "../src/domain/wallet-portfolio.js"
import { fromBaseUnits, MoneyDecimal } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyConfig, gasThresholdsOf } from "./custody-config.js"

export const GAS_CHAINS = ["TRC20", "BEP20", "SOLANA"] as const satisfies ReadonlyArray<Chain>

export interface GasWalletState {
  readonly chain: (typeof GAS_CHAINS)[number]
  readonly address: string
  readonly asset: string
  /** In the native asset's units; none when the node has not answered yet. */
  readonly balance: Option.Option<string>
  readonly status: GasStatus
  readonly readAt: Option.Option<Date>
}

const CACHE_MS = 5_000

/**
 * The platform gas wallets (account 0, index 0 per network): their balances read from the chain, kept at
 * most a few seconds, and their status by the configured thresholds. A low wallet logs a warning once per
 * change; health and metrics show it.
 */
export class GasWallets extends Effect.Service<GasWallets>()("facet/GasWallets", {
  effect: Effect.gen(function* () {
    const clients = yield* ChainClients
    const wallets = yield* Wallets
    const config = yield* CustodyConfig
    const cache = yield* Ref.make(new Map<string, GasWalletState>())

    const statusOf = (chain: (typeof GAS_CHAINS)[number], balance: string): GasStatus => {
      const limits = gasThresholdsOf(config, chain)
      if (limits === undefined) return "ok"
      const value = new MoneyDecimal(balance)
      if (value.lessThanOrEqualTo(limits.empty)) return "empty"
      return value.lessThan(limits.low) ? "low" : "ok"
    }

    const read = (chain: (typeof GAS_CHAINS)[number]) =>
      Effect.gen(function* () {
        const wallet = yield* Effect.orDie(wallets.gasWallet(chain))
        const native = NATIVE_ASSETS[chain]
        const previous = (yield* Ref.get(cache)).get(chain)
        const client = clients.get(chain)
        const balance = Option.isNone(client)
          ? Option.none<bigint>()
          : yield* client.value
              .balance(wallet.address, native.currency)
              .pipe(Effect.timeout("3 seconds"), Effect.option)
        const state: GasWalletState = Option.isNone(balance)
          ? // the node did not answer: the last reading stands, marked by its time
            (previous ?? {
              chain,
              address: wallet.address,
              asset: native.currency,
              balance: Option.none(),
              status: "unknown",
              readAt: Option.none()
            })
          : (() => {
              const shown = fromBaseUnits(balance.value, native.decimals)
              return {
                chain,
                address: wallet.address,
                asset: native.currency,
                balance: Option.some(shown),
                status: statusOf(chain, shown),
                readAt: Option.some(new Date())
              }
            })()
        if (state.status !== previous?.status && (state.status === "low" || state.status === "empty")) {
          yield* Effect.logWarning(
            `gas wallet ${chain} ${wallet.address} is ${state.status}: ${Option.getOrElse(state.balance, () => "?")} ${native.currency}; top it up`
          )
        }
        yield* Ref.update(cache, (m) => new Map(m).set(chain, state))
        return state
      })

    /** One network's gas wallet, read again when the cached reading is older than a few seconds. */
    const state = Effect.fn("GasWallets.state")(function* (chain: (typeof GAS_CHAINS)[number]) {
      const cached = (yield* Ref.get(cache)).get(chain)
      const fresh =
        cached !== undefined && Option.isSome(cached.readAt) && Date.now() - cached.readAt.value.getTime() < CACHE_MS
      return fresh && cached !== undefined ? cached : yield* read(chain)
    })

    const all = Effect.forEach(GAS_CHAINS, state, { concurrency: 3 })

    /** The last readings, without touching a node (what /health and /metrics show). */
    const cached = Effect.map(Ref.get(cache), (m) =>
      GAS_CHAINS.flatMap((chain) => {
        const found = m.get(chain)
        return found === undefined ? [] : [found]
      })
    )

    return { state, all, cached } as const
  }),
  dependencies: [Wallets.Default]
}) {}

/** Reads the gas wallets every 15 s in the background, so health and metrics answer from memory. */
export const GasWalletsRefreshLive = Layer.scopedDiscard(
  Effect.flatMap(GasWallets, (gas) =>
    Effect.forkScoped(
      Effect.repeat(gas.all.pipe(Effect.catchAllCause(() => Effect.void)), Schedule.spaced("15 seconds"))
    )
  )
).pipe(Layer.provide(GasWallets.Default))
