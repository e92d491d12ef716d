import { DateTime, Effect, Option } from "effect"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import type { AssetPolicy } from "../src/domain/asset-policy.js"
import type { Chain } from "../src/domain/chain.js"
import type { WalletPortfolio } from "../src/domain/wallet-portfolio.js"
import { MoneyDecimal, normalizeDecimal } from "../src/money.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { Wallets } from "../src/wallets/wallets.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { CustodyConfig } from "./custody-config.js"
import { type GAS_CHAINS, GasWallets } from "./gas-wallets.js"
import { WalletAssetNotFound } from "./collection-errors.js"

interface Balance {
  readonly uncollected: MoneyDecimal
  readonly available: MoneyDecimal
  readonly locked: MoneyDecimal
}

const ZERO: Balance = { uncollected: new MoneyDecimal(0), available: new MoneyDecimal(0), locked: new MoneyDecimal(0) }
const total = (b: Balance) => b.uncollected.plus(b.available).plus(b.locked)
const usdt = (value: MoneyDecimal) => value.toFixed(6)
const isGasChain = (chain: Chain): chain is (typeof GAS_CHAINS)[number] => chain !== "POLYGON"

/**
 * What a merchant holds, from the ledger (never from chain balances): per asset across networks, with
 * values in USDT from the configured price source (an unpriced asset is counted, never guessed), the main
 * address of each network and the platform gas wallet's state there.
 */
export class WalletPortfolioViews extends Effect.Service<WalletPortfolioViews>()("facet/WalletPortfolioViews", {
  effect: Effect.gen(function* () {
    const ledgerStore = yield* LedgerStore
    const catalog = yield* AssetCatalog
    const wallets = yield* Wallets
    const walletStore = yield* WalletStore
    const gas = yield* GasWallets
    const config = yield* CustodyConfig

    const balancesOf = (merchantId: string) =>
      Effect.map(
        Effect.orDie(ledgerStore.merchantBalances(merchantId)),
        (rows) =>
          new Map(
            rows.map((r) => [
              `${r.chain}-${r.currency}`,
              {
                uncollected: new MoneyDecimal(r.uncollected),
                available: new MoneyDecimal(r.available),
                locked: new MoneyDecimal(r.locked)
              } satisfies Balance
            ])
          )
      )

    /** The assets worth showing: enabled ones, and any other that still holds a balance. */
    const shown = (policies: ReadonlyArray<AssetPolicy>, balances: ReadonlyMap<string, Balance>) =>
      policies.filter((p) => p.merchant_enabled || !total(balances.get(p.asset_key) ?? ZERO).isZero())

    const portfolio = Effect.fn("WalletPortfolioViews.portfolio")(function* (merchantId: string) {
      const policies = yield* catalog.policies(merchantId)
      const balances = yield* balancesOf(merchantId)
      const assets = shown(policies, balances)
      const chains = [...new Set(assets.map((p) => p.chain))]
      const mains = new Map<Chain, string>()
      for (const chain of chains) mains.set(chain, (yield* Effect.orDie(wallets.mainWallet(merchantId, chain))).address)
      const gasStates = new Map(
        (yield* Effect.forEach(chains.filter(isGasChain), gas.state, { concurrency: 3 })).map((g) => [g.chain, g])
      )
      const byCurrency = new Map<string, Array<AssetPolicy>>()
      for (const p of assets) byCurrency.set(p.currency, [...(byCurrency.get(p.currency) ?? []), p])
      let unpriced = 0
      const sum = {
        value: new MoneyDecimal(0),
        available: new MoneyDecimal(0),
        uncollected: new MoneyDecimal(0),
        locked: new MoneyDecimal(0)
      }
      const shownAssets = [...byCurrency].map(([currency, networks]) => {
        const b = networks.reduce<Balance>((acc, p) => {
          const n = balances.get(p.asset_key) ?? ZERO
          return {
            uncollected: acc.uncollected.plus(n.uncollected),
            available: acc.available.plus(n.available),
            locked: acc.locked.plus(n.locked)
          }
        }, ZERO)
        const price = Option.fromNullable(config.prices.get(currency))
        if (Option.isNone(price)) unpriced += 1
        const values = Option.map(price, (p) => ({
          value: total(b).times(p),
          available: b.available.times(p),
          uncollected: b.uncollected.times(p),
          locked: b.locked.times(p)
        }))
        if (Option.isSome(values)) {
          sum.value = sum.value.plus(values.value.value)
          sum.available = sum.available.plus(values.value.available)
          sum.uncollected = sum.uncollected.plus(values.value.uncollected)
          sum.locked = sum.locked.plus(values.value.locked)
        }
        return {
          asset_id: currency,
          currency,
          display_name: networks[0]?.display_name.replace(/ \(.*\)$/, "") ?? currency,
          total_balance: normalizeDecimal(total(b)),
          available_balance: normalizeDecimal(b.available),
          uncollected_balance: normalizeDecimal(b.uncollected),
          locked_balance: normalizeDecimal(b.locked),
          ...(Option.isSome(values)
            ? {
                value_usdt: usdt(values.value.value),
                available_value_usdt: usdt(values.value.available),
                uncollected_value_usdt: usdt(values.value.uncollected)
              }
            : {}),
          networks: networks.map((p) => {
            const n = balances.get(p.asset_key) ?? ZERO
            const g = isGasChain(p.chain) ? gasStates.get(p.chain) : undefined
            return {
              network_asset_id: p.asset_key,
              chain: p.chain,
              currency: p.currency,
              main_address: mains.get(p.chain) ?? "",
              total_balance: normalizeDecimal(total(n)),
              available_balance: normalizeDecimal(n.available),
              uncollected_balance: normalizeDecimal(n.uncollected),
              locked_balance: normalizeDecimal(n.locked),
              gas_asset: p.gas_asset,
              gas_balance: g === undefined ? "0" : Option.getOrElse(g.balance, () => "0"),
              gas_status: g?.status ?? ("unknown" as const),
              actions: { deposit: p.actions.deposit, withdraw: p.actions.withdraw, collect: p.actions.collect }
            }
          })
        }
      })
      const addresses = yield* Effect.orDie(walletStore.countOnNetworks(merchantId, chains))
      const result: WalletPortfolio = {
        quote_currency: "USDT",
        as_of: DateTime.formatIso(yield* DateTime.now),
        price_source: config.priceSource,
        totals: {
          value_usdt: usdt(sum.value),
          available_value_usdt: usdt(sum.available),
          uncollected_value_usdt: usdt(sum.uncollected),
          locked_value_usdt: usdt(sum.locked),
          unpriced_asset_count: unpriced,
          network_count: chains.length,
          address_count: addresses
        },
        assets: shownAssets
      }
      return result
    })

    /** GET /v1/wallet-assets (deprecated): per asset key, with the count of receive wallets. */
    const summary = Effect.fn("WalletPortfolioViews.summary")(function* (merchantId: string) {
      const policies = yield* catalog.policies(merchantId)
      const balances = yield* balancesOf(merchantId)
      const counts = new Map((yield* Effect.orDie(walletStore.receiveCounts(merchantId))).map((r) => [r.network, r.n]))
      return {
        deprecated: true as const,
        successor: "/v1/wallet-portfolio",
        note: "Deprecated: read balances from GET /v1/wallet-portfolio. Only available_balance is withdrawable; total_balance is not.",
        items: shown(policies, balances).map((p) => {
          const b = balances.get(p.asset_key) ?? ZERO
          return {
            asset_key: p.asset_key,
            chain: p.chain,
            currency: p.currency,
            total_balance: normalizeDecimal(total(b)),
            available_balance: normalizeDecimal(b.available),
            uncollected_balance: normalizeDecimal(b.uncollected),
            locked_balance: normalizeDecimal(b.locked),
            receive_wallet_count: counts.get(p.chain) ?? 0
          }
        })
      }
    })

    /** GET /v1/wallet-assets/{asset_key}: receive wallets of the asset holding uncollected balance, or matching `q`. */
    const detail = Effect.fn("WalletPortfolioViews.detail")(function* (
      merchantId: string,
      assetKey: string,
      query: { readonly q?: string | undefined; readonly limit: number }
    ) {
      const policy = (yield* catalog.policies(merchantId)).find((p) => p.asset_key === assetKey)
      if (policy === undefined) return yield* new WalletAssetNotFound({ assetKey })
      const b = (yield* balancesOf(merchantId)).get(assetKey) ?? ZERO
      const main = yield* Effect.orDie(wallets.mainWallet(merchantId, policy.chain))
      const rows = yield* Effect.orDie(
        walletStore.receiveWalletsOfAsset({
          merchantId,
          chain: policy.chain,
          currency: policy.currency,
          q: query.q?.trim() ?? "",
          limit: query.limit
        })
      )
      const scale = new MoneyDecimal(10).pow(policy.decimals)
      return {
        asset_key: assetKey,
        chain: policy.chain,
        currency: policy.currency,
        main_address: main.address,
        uncollected_balance: normalizeDecimal(b.uncollected),
        available_balance: normalizeDecimal(b.available),
        locked_balance: normalizeDecimal(b.locked),
        total: rows[0]?.total ?? 0,
        limit: query.limit,
        items: rows.map((r) => ({
          wallet_id: r.id,
          wallet_no: r.wallet_no,
          address: r.address,
          purpose: r.purpose,
          external_user_id: r.external_user_id,
          uncollected_balance: normalizeDecimal(new MoneyDecimal(r.units).div(scale)),
          last_tx_hash: r.last_tx_hash,
          sweep_in_flight: r.sweep
        }))
      }
    })

    return { portfolio, summary, detail } as const
  }),
  dependencies: [LedgerStore.Default, WalletStore.Default, AssetCatalog.Default, Wallets.Default, GasWallets.Default]
}) {}
