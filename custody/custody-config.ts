import { Config, Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { AppConfig } from "../src/config.js"
import type { Chain } from "../src/domain/chain.js"
import type { FeeCap } from "../src/chains/chain-client.js"
import { DecimalString, MoneyDecimal } from "../src/money.js"

/** Gas-wallet thresholds in the native asset's units: below `low` a warning, below `empty` nothing can be funded. */
export interface GasThresholds {
  readonly low: string
  readonly empty: string
}

export interface CustodyConfigShape {
  /** How often a transfer in flight is looked up on chain. */
  readonly pollInterval: Duration.Duration
  /** Gas sent to a receive wallet: the estimate plus this share of it (the price may move before the sweep). */
  readonly gasMarginPercent: number
  /** A sweep whose gas costs more than this share of its value is refused (the merchant would lose money). */
  readonly maxGasSharePercent: number
  /** Operations not updated for this long are handed to their wallet's actor again (after a crash). */
  readonly resumeAfter: Duration.Duration
  readonly gasThresholds: Readonly<Record<"TRC20" | "BEP20" | "SOLANA", GasThresholds>>
  /** Static prices in USDT per asset currency (the devnet's price source; an unpriced asset is never guessed). */
  readonly prices: ReadonlyMap<string, string>
  readonly priceSource: string
  /** Automatic collection: the uncollected balance (asset units) above which a receive wallet is swept by itself. */
  readonly autoSweep: ReadonlyMap<string, string>
  readonly autoSweepInterval: Duration.Duration
  /**
   * Fault injection for the crash tests (FACET_FAULT_CRASH_POINT, never set in production):
   * `<operation type>:after-sign` or `:after-broadcast` kills the process with SIGKILL at that point.
   */
  readonly crashPoint: Option.Option<string>
  /** An operation unfinished for longer than this makes /health degraded. */
  readonly stuckAfterMinutes: number
  /**
   * What one transfer may cost, in native base units (FACET_MAX_NETWORK_FEE_<CHAIN>, in the native asset),
   * and the highest unit price paid whatever the quote (FACET_MAX_GAS_PRICE_<CHAIN>: gwei on BEP20, sun
   * per energy unit on TRON, lamports per signature on Solana). A native withdrawal's cap is its quote.
   */
  readonly feeCaps: Readonly<Record<"TRC20" | "BEP20" | "SOLANA", FeeCap>>
  /** How long a transfer waits for the network's price to fall under its cap before it fails. */
  readonly feeWait: Duration.Duration
  /** An EVM transfer not mined this long after it was sent is replaced at its nonce with a higher gas price (within its cap). */
  readonly feeBumpAfter: Duration.Duration
  /** Native coins at a receive wallet below this (base units) wait for more before custody consolidates them. */
  readonly consolidateMin: Readonly<Record<"TRC20" | "BEP20", bigint>>
  /**
   * Solana: a receive wallet's token account emptied by a sweep is closed, its rent back to the gas wallet —
   * an order address's once its orders are settled, a deposit address's (its next depositor pays to make it
   * again) only when asked.
   */
  readonly closeTokenAccounts: { readonly order: boolean; readonly deposit: boolean }
  /**
   * TRON: a TRC20 transfer by custody is paid for with energy lent from the platform's staked TRX when the
   * stake can lend it (FACET_TRON_ENERGY, on by default), TRX burned otherwise. The stake is the gas wallet's,
   * or that of account 0 at FACET_TRON_STAKING_INDEX when it is not 0.
   */
  readonly energy: { readonly enabled: boolean; readonly stakingIndex: number }
}

export class CustodyConfig extends Context.Tag("facet/CustodyConfig")<CustodyConfig, CustodyConfigShape>() {}

const optionalDecimal = (name: string) =>
  Config.option(
    Config.string(name).pipe(
      Config.validate({ message: `${name} must be a decimal such as 0.5`, validation: Schema.is(DecimalString) })
    )
  )
const decimal = (name: string, fallback: string) =>
  Config.map(
    optionalDecimal(name),
    Option.getOrElse(() => fallback)
  )

/** A configured cap in base units; digits past the unit are dropped (a cap never rounds up). */
const flooredUnits = (value: string, decimals: number) =>
  BigInt(new MoneyDecimal(value).times(new MoneyDecimal(10).pow(decimals)).floor().toFixed(0))

const DEVNET_PRICES: ReadonlyArray<readonly [string, string]> = [
  ["USDT", "1"],
  ["TRX", "0.25"],
  ["BNB", "600"],
  ["SOL", "150"]
]
const ASSETS = ["TRC20-USDT", "TRC20-TRX", "BEP20-USDT", "BEP20-BNB", "BEP20-VELNX", "SOLANA-SOL", "SOLANA-USDT"]

export const CustodyConfigLive = Layer.effect(
  CustodyConfig,
  Effect.gen(function* () {
    const app = yield* AppConfig
    const devnet = app.network === "devnet"
    const raw = yield* Config.all({
      pollMs: Config.integer("FACET_CUSTODY_POLL_MS").pipe(Config.withDefault(devnet ? 500 : 3000)),
      margin: Config.integer("FACET_GAS_MARGIN_PERCENT").pipe(Config.withDefault(30)),
      share: Config.number("FACET_SWEEP_MAX_GAS_SHARE_PERCENT").pipe(Config.withDefault(5)),
      resumeMs: Config.integer("FACET_CUSTODY_RESUME_MS").pipe(Config.withDefault(60_000)),
      trc20Low: decimal("FACET_GAS_LOW_TRC20", "100"),
      trc20Empty: decimal("FACET_GAS_EMPTY_TRC20", "10"),
      bep20Low: decimal("FACET_GAS_LOW_BEP20", "0.1"),
      bep20Empty: decimal("FACET_GAS_EMPTY_BEP20", "0.005"),
      solanaLow: decimal("FACET_GAS_LOW_SOLANA", "0.5"),
      solanaEmpty: decimal("FACET_GAS_EMPTY_SOLANA", "0.01"),
      crashPoint: Config.option(Config.string("FACET_FAULT_CRASH_POINT")),
      autoSweepMs: Config.integer("FACET_AUTO_SWEEP_INTERVAL_MS").pipe(Config.withDefault(60_000)),
      stuckMinutes: Config.number("FACET_CUSTODY_STUCK_MINUTES").pipe(Config.withDefault(30)),
      feeWaitMinutes: Config.number("FACET_FEE_WAIT_MINUTES").pipe(Config.withDefault(60)),
      feeBumpSeconds: Config.number("FACET_FEE_BUMP_AFTER_SECONDS").pipe(Config.withDefault(90)),
      consolidateMinTrc20: decimal("FACET_CONSOLIDATE_MIN_TRC20", "1"),
      consolidateMinBep20: decimal("FACET_CONSOLIDATE_MIN_BEP20", "0.001"),
      bep20MaxFee: decimal("FACET_MAX_NETWORK_FEE_BEP20", "0.002"),
      bep20MaxPrice: decimal("FACET_MAX_GAS_PRICE_BEP20", "10"),
      trc20MaxFee: decimal("FACET_MAX_NETWORK_FEE_TRC20", "50"),
      // sun per energy unit: mainnet (and the devnet, which charges as it does) has charged 100 since proposal #104
      trc20MaxPrice: decimal("FACET_MAX_GAS_PRICE_TRC20", "210"),
      solanaMaxFee: decimal("FACET_MAX_NETWORK_FEE_SOLANA", "0.01"),
      solanaMaxPrice: decimal("FACET_MAX_GAS_PRICE_SOLANA", "5000"),
      closeOrderAccounts: Config.boolean("FACET_SOLANA_CLOSE_ORDER_ACCOUNTS").pipe(Config.withDefault(true)),
      closeDepositAccounts: Config.boolean("FACET_SOLANA_CLOSE_DEPOSIT_ACCOUNTS").pipe(Config.withDefault(false)),
      energy: Config.boolean("FACET_TRON_ENERGY").pipe(Config.withDefault(true)),
      stakingIndex: Config.integer("FACET_TRON_STAKING_INDEX").pipe(
        Config.validate({
          message: "FACET_TRON_STAKING_INDEX must be 0 (the gas wallet) or a positive derivation index",
          validation: (n) => n >= 0 && n < 2 ** 31
        }),
        Config.withDefault(0)
      )
    })
    // FACET_PRICE_<CURRENCY> (USDT per unit) overrides or adds prices; mainnet has none by default but USDT
    const prices = new Map<string, string>(devnet ? DEVNET_PRICES : [["USDT", "1"]])
    for (const currency of ["USDT", "TRX", "BNB", "SOL", "VELNX"]) {
      const price = yield* optionalDecimal(`FACET_PRICE_${currency}`)
      if (Option.isSome(price)) prices.set(currency, price.value)
    }
    const autoSweep = new Map<string, string>()
    for (const asset of ASSETS) {
      const threshold = yield* optionalDecimal(`FACET_AUTO_SWEEP_${asset.replace("-", "_")}`)
      if (Option.isSome(threshold)) autoSweep.set(asset, threshold.value)
    }
    return {
      pollInterval: Duration.millis(raw.pollMs),
      gasMarginPercent: raw.margin,
      maxGasSharePercent: raw.share,
      resumeAfter: Duration.millis(raw.resumeMs),
      gasThresholds: {
        TRC20: { low: raw.trc20Low, empty: raw.trc20Empty },
        BEP20: { low: raw.bep20Low, empty: raw.bep20Empty },
        SOLANA: { low: raw.solanaLow, empty: raw.solanaEmpty }
      },
      prices,
      priceSource: devnet ? "static:devnet" : "static:configured",
      autoSweep,
      autoSweepInterval: Duration.millis(raw.autoSweepMs),
      crashPoint: raw.crashPoint,
      stuckAfterMinutes: raw.stuckMinutes,
      feeCaps: {
        BEP20: { maxFee: flooredUnits(raw.bep20MaxFee, 18), maxGasPrice: flooredUnits(raw.bep20MaxPrice, 9) },
        TRC20: { maxFee: flooredUnits(raw.trc20MaxFee, 6), maxGasPrice: flooredUnits(raw.trc20MaxPrice, 0) },
        SOLANA: { maxFee: flooredUnits(raw.solanaMaxFee, 9), maxGasPrice: flooredUnits(raw.solanaMaxPrice, 0) }
      },
      feeWait: Duration.minutes(raw.feeWaitMinutes),
      feeBumpAfter: Duration.seconds(raw.feeBumpSeconds),
      consolidateMin: {
        TRC20: flooredUnits(raw.consolidateMinTrc20, 6),
        BEP20: flooredUnits(raw.consolidateMinBep20, 18)
      },
      closeTokenAccounts: { order: raw.closeOrderAccounts, deposit: raw.closeDepositAccounts },
      energy: { enabled: raw.energy, stakingIndex: raw.stakingIndex }
    }
  })
)

/**
 * `units` (gas, energy) with FACET_GAS_MARGIN_PERCENT on top: what a gas funding sends and what a lending
 * lends, for the price or the call moving before the transfer is signed.
 */
export const withGasMargin = (config: CustodyConfigShape, units: bigint) =>
  units + (units * BigInt(config.gasMarginPercent)) / 100n

export const gasThresholdsOf = (config: CustodyConfigShape, chain: Chain): GasThresholds | undefined =>
  chain === "POLYGON" ? undefined : config.gasThresholds[chain]
