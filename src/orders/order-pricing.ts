import { Either } from "effect"
import type { AssetPolicy } from "../domain/asset-policy.js"
import type { Chain } from "../domain/chain.js"
import type { CheckoutMode, CreateOrderRequest } from "../domain/order.js"
import { MoneyDecimal } from "../money.js"

export interface PricedAsset {
  readonly policy: AssetPolicy
  /** What the customer pays in this asset, at the asset's precision. */
  readonly amount: string
}

export interface OrderPricing {
  readonly chain: Chain
  readonly currency: string
  readonly checkoutMode: CheckoutMode
  readonly assets: ReadonlyArray<PricedAsset>
}

/** Preference when the request leaves chain or currency open: USDT first, TRON before BNB Chain. */
const PREFERENCE = ["TRC20-USDT", "BEP20-USDT", "TRC20-TRX", "BEP20-BNB", "BEP20-VELNX"]
const rank = (p: AssetPolicy) => {
  const i = PREFERENCE.indexOf(p.asset_key)
  return i === -1 ? PREFERENCE.length : i
}

// a pricing currency that is no asset of ours still gets a sane precision bound
const PRICING_PRECISION = 18

/** Why an asset cannot take a checkout payment for this merchant, or undefined when it can. */
const refusal = (key: string, policy: AssetPolicy | undefined): string | undefined => {
  if (key.startsWith("POLYGON-")) return `${key}: POLYGON is sunset and unavailable for new checkout orders`
  if (policy === undefined) return `${key} is not a supported asset (GET /v1/wallet-asset-policies lists them)`
  if (policy.status !== "live") return `${key} is ${policy.status}: checkout orders accept only live assets`
  if (!policy.merchant_enabled)
    return `${key} is not enabled for this merchant: enroll it with POST /v1/wallet-asset-enrollments`
  return undefined
}

/**
 * Resolves which assets an order can be paid in and how much of each, from the request and the
 * merchant's policies (fail closed). Rules, in order:
 * - `accepted_assets` lists the payable assets; each must be live and enabled. The order's chain and
 *   currency default to the first of them.
 * - Otherwise the order's asset is `chain` + `currency`; a missing currency is USDT when the merchant
 *   has it on that chain, else its first usable asset there; a missing chain is the first usable chain
 *   for the currency (TRC20 before BEP20); with neither, the first usable of TRC20-USDT, BEP20-USDT,
 *   TRC20-TRX, BEP20-BNB, BEP20-VELNX. `multi_asset` then also offers every other usable asset of the
 *   same currency.
 * - An asset priced in another currency than the order's needs `exchange_rate` (asset units per order
 *   unit); its amount is rounded up at the asset's precision. One rate prices one foreign currency.
 */
export const priceOrder = (
  request: CreateOrderRequest,
  policies: ReadonlyArray<AssetPolicy>
): Either.Either<OrderPricing, string> => {
  const amount = new MoneyDecimal(request.amount)
  if (amount.lte(0)) return Either.left("amount must be greater than 0")
  if (request.chain === "POLYGON") return Either.left("chain POLYGON is sunset and unavailable for new checkout orders")
  const byKey = new Map(policies.map((p) => [p.asset_key, p]))
  const usable = policies.filter((p) => refusal(p.asset_key, p) === undefined).sort((a, b) => rank(a) - rank(b))
  const currency = request.currency?.trim().toUpperCase()

  let chosen: Array<AssetPolicy>
  let orderChain: Chain
  let orderCurrency: string
  if (request.accepted_assets !== undefined) {
    chosen = []
    for (const accepted of request.accepted_assets) {
      const key = `${accepted.chain}-${accepted.currency.trim().toUpperCase()}`
      const policy = byKey.get(key)
      const reason = refusal(key, policy)
      if (reason !== undefined || policy === undefined) return Either.left(`accepted_assets: ${reason ?? key}`)
      if (chosen.some((p) => p.asset_key === key)) return Either.left(`accepted_assets lists ${key} twice`)
      chosen.push(policy)
    }
    const first = chosen[0]
    if (first === undefined) return Either.left("accepted_assets must list at least one asset")
    orderChain = request.chain ?? first.chain
    orderCurrency = currency ?? first.currency
  } else {
    const candidates = usable.filter(
      (p) =>
        (request.chain === undefined || p.chain === request.chain) &&
        (currency === undefined || p.currency === currency)
    )
    const preferred =
      request.chain !== undefined && currency === undefined
        ? (candidates.find((p) => p.currency === "USDT") ?? candidates[0])
        : candidates[0]
    if (preferred === undefined) {
      const key = `${request.chain ?? "?"}-${currency ?? "?"}`
      const exact = request.chain !== undefined && currency !== undefined ? refusal(key, byKey.get(key)) : undefined
      return Either.left(
        exact ??
          `no live asset enabled for this merchant matches chain ${request.chain ?? "(any)"} and currency ${currency ?? "(any)"}`
      )
    }
    orderChain = preferred.chain
    orderCurrency = preferred.currency
    chosen =
      request.checkout_mode === "multi_asset"
        ? [preferred, ...usable.filter((p) => p.currency === preferred.currency && p !== preferred)]
        : [preferred]
  }

  const foreign = new Set(chosen.filter((p) => p.currency !== orderCurrency).map((p) => p.currency))
  if (foreign.size > 1) {
    return Either.left(
      `one exchange_rate cannot price several currencies (${[...foreign].join(", ")}) against ${orderCurrency}`
    )
  }
  const rate = request.exchange_rate === undefined ? undefined : new MoneyDecimal(request.exchange_rate)
  if (rate?.lte(0)) return Either.left("exchange_rate must be greater than 0")
  const ownPrecision = chosen.filter((p) => p.currency === orderCurrency).map((p) => p.amount_precision)
  const precision = ownPrecision.length > 0 ? Math.min(...ownPrecision) : PRICING_PRECISION
  if (amount.decimalPlaces() > precision) {
    return Either.left(`amount has more than ${precision} fractional digits, the precision of ${orderCurrency}`)
  }

  const assets: Array<PricedAsset> = []
  for (const policy of chosen) {
    if (policy.currency === orderCurrency) {
      assets.push({ policy, amount: amount.toFixed() })
      continue
    }
    if (rate === undefined) {
      return Either.left(
        `${policy.asset_key} is priced in ${orderCurrency}: exchange_rate (${policy.currency} per ${orderCurrency}) is required`
      )
    }
    const converted = amount.times(rate).toDecimalPlaces(policy.amount_precision, MoneyDecimal.ROUND_UP)
    if (converted.lte(0)) return Either.left(`${policy.asset_key}: the converted amount rounds to 0`)
    assets.push({ policy, amount: converted.toFixed() })
  }
  const checkoutMode = request.checkout_mode ?? (assets.length > 1 ? "multi_asset" : "single_asset")
  return Either.right({ chain: orderChain, currency: orderCurrency, checkoutMode, assets })
}

/** Why an asset cannot take a checkout payment for this merchant (undefined: it can), for payment links' visits. */
export const checkoutRefusal = refusal
