import { Effect, Layer, Option, Ref, Schedule } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import type { GasStatus } from "../src/domain/wallet-portfolio.js"
import { fromBaseUnits, MoneyDecimal } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { CustodyConfig, gasThresholdsOf, withGasMargin } from "./custody-config.js"

export const GAS_CHAINS = ["TRC20", "BEP20", "SOLANA"] as const satisfies ReadonlyArray<Chain>

/**
 * Energy of a USDT transfer to an address that never held USDT (the costlier case), its dynamic factor
 * included: what one sweep or withdrawal borrows, before the gas margin (the devnet's figure; mainnet's
 * recorded transfer used 130,285).
 */
export const USDT_TRANSFER_ENERGY = 130_460n

/** What the platform's stake can lend, as TRON's gas status counts it (sun of staked TRX). */
export interface StakeReading {
  /** What the chain says can be lent now (staked and neither lent nor backing energy used). */
  readonly lendable: bigint
  /** What lends one USDT transfer's energy, the gas margin included. */
  readonly perTransfer: bigint
}

/**
 * TRON's gas status counts the stake's energy as well as the gas wallet's TRX: a sweep or a withdrawal
 * borrows its energy when the stake can lend it, and TRX then pays only activations and bandwidth.
 * - `empty`: TRX at or under FACET_GAS_EMPTY_TRC20, whatever the stake (activations and bandwidth need TRX);
 * - `ok`: TRX at or over FACET_GAS_LOW_TRC20, or the stake can lend one USDT transfer's energy now;
 * - `low`: neither; `unknown`: the balance was never read.
 * Lendings being signed or sent are not subtracted: they are on chain within seconds.
 */
export const tronGasStatus = (byTrx: GasStatus, stake: Option.Option<StakeReading>): GasStatus =>
  byTrx === "low" && Option.isSome(stake) && lendableTransfers(stake.value) >= 1 ? "ok" : byTrx

/** How many USDT transfers' energy the stake can lend now, one after the other. */
export const lendableTransfers = (stake: StakeReading) =>
  stake.perTransfer <= 0n ? 0 : Number(stake.lendable / stake.perTransfer)

export interface GasWalletState {
  readonly chain: (typeof GAS_CHAINS)[number]
  readonly address: string
  readonly asset: string
  /** In the native asset's units; none when the node has not answered yet. */
  readonly balance: Option.Option<string>
  /** TRON, with energy from the stake on: what the stake can lend, when it was read. */
  readonly stake: Option.Option<StakeReading>
  readonly status: GasStatus
  readonly readAt: Option.Option<Date>
}

const CACHE_MS = 5_000

/**
 * The platform gas wallets (account 0, index 0 per network): their balances read from the chain (and on
 * TRON what the stake can lend), kept at most a few seconds, and their status by the configured thresholds
 * (`tronGasStatus` on TRON). A low wallet logs a warning once per change; health and metrics show it.
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

    /** What the TRON stake can lend now and what one transfer borrows; none when energy is off or unread. */
    const readStake = Effect.gen(function* () {
      const reads = Option.flatMap(clients.get("TRC20"), (c) => Option.fromNullable(c.energy))
      if (!config.energy.enabled || Option.isNone(reads)) return Option.none<StakeReading>()
      const owner = yield* Effect.orDie(wallets.stakingWallet(config.energy.stakingIndex))
      return yield* Effect.all(
        {
          lendable: reads.value.lendable(owner.address),
          perTransfer: reads.value.stakeFor(owner.address, withGasMargin(config, USDT_TRANSFER_ENERGY))
        },
        { concurrency: 2 }
      ).pipe(Effect.timeout("3 seconds"), Effect.option)
    })

    const read = (chain: (typeof GAS_CHAINS)[number]) =>
      Effect.gen(function* () {
        const wallet = yield* Effect.orDie(wallets.gasWallet(chain))
        const native = NATIVE_ASSETS[chain]
        const previous = (yield* Ref.get(cache)).get(chain)
        const client = clients.get(chain)
        // read side by side: a node that does not answer costs one timeout, not two
        const [balance, stakeRead] = yield* Effect.all(
          [
            Option.isNone(client)
              ? Effect.succeed(Option.none<bigint>())
              : client.value.balance(wallet.address, native.currency).pipe(Effect.timeout("3 seconds"), Effect.option),
            chain === "TRC20" ? readStake : Effect.succeed(Option.none<StakeReading>())
          ],
          { concurrency: 2 }
        )
        // a stake the node said nothing about this time: the last reading stands
        const stake = Option.orElse(stakeRead, () => Option.flatMap(Option.fromNullable(previous), (p) => p.stake))
        const state: GasWalletState = Option.isNone(balance)
          ? // the node did not answer: the last reading stands, marked by its time
            (previous ?? {
              chain,
              address: wallet.address,
              asset: native.currency,
              balance: Option.none(),
              stake: Option.none(),
              status: "unknown",
              readAt: Option.none()
            })
          : (() => {
              const shown = fromBaseUnits(balance.value, native.decimals)
              const byTrx = statusOf(chain, shown)
              return {
                chain,
                address: wallet.address,
                asset: native.currency,
                balance: Option.some(shown),
                stake,
                status: chain === "TRC20" ? tronGasStatus(byTrx, stake) : byTrx,
                readAt: Option.some(new Date())
              }
            })()
        if (state.status !== previous?.status && (state.status === "low" || state.status === "empty")) {
          const lendable = Option.match(state.stake, {
            onNone: () => "",
            onSome: (s) =>
              `, and the stake can lend ${fromBaseUnits(s.lendable, native.decimals)} TRX of energy (a transfer needs ${fromBaseUnits(s.perTransfer, native.decimals)})`
          })
          yield* Effect.logWarning(
            `gas wallet ${chain} ${wallet.address} is ${state.status}: ${Option.getOrElse(state.balance, () => "?")} ${native.currency}${lendable}; top it up`
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
