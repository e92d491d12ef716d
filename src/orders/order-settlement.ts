import { Decimal } from "decimal.js"

/**
 * An order's status from its payments (docs/reference/decisions.md "Orders"), decided in each asset's own units: an
 * order is paid when the confirmed amounts cover it, Σ paid / asked ≥ 1 over its accepted assets,
 * compared exactly (never through values rounded into the order's currency: three payments of a third
 * make a whole).
 */

export type OrderStatus = "PENDING" | "CONFIRMING" | "PAID" | "EXPIRED" | "PARTIALLY_PAID"

export interface AcceptedAsset {
  readonly chain: string
  readonly currency: string
  /** What the order asks in this asset, in its units. */
  readonly asked: string
}

export interface OrderPayment {
  readonly chain: string
  readonly currency: string
  readonly amount: string
  readonly status: "pending" | "confirmed"
  /** When its block was made (chain time); null for rows written before block times were kept. */
  readonly blockTime: Date | null
}

export interface OrderBefore {
  readonly status: OrderStatus
  readonly latePayment: boolean
  readonly expireAt: Date
  /** Whether the order's time is up (on the chains' clocks). */
  readonly expired: boolean
}

// products of a few amounts of up to ~40 digits each must stay exact
const Exact = Decimal.clone({ precision: 1000, rounding: Decimal.ROUND_DOWN })

/** Σ paid_i / asked_i ≥ 1, by cross-multiplication: Σ paid_i · Π_{j≠i} asked_j ≥ Π_j asked_j. */
export const covers = (
  assets: ReadonlyArray<AcceptedAsset>,
  paidOf: (asset: AcceptedAsset) => Decimal.Value
): boolean => {
  const asked = assets.map((a) => new Exact(a.asked)).filter((a) => a.gt(0))
  if (asked.length !== assets.length || assets.length === 0) return false
  const all = asked.reduce((p, a) => p.times(a), new Exact(1))
  const sum = assets.reduce((s, asset, i) => {
    const others = asked.reduce((p, a, j) => (i === j ? p : p.times(a)), new Exact(1))
    return s.plus(new Exact(paidOf(asset)).times(others))
  }, new Exact(0))
  return sum.gte(all)
}

const key = (chain: string, currency: string) => `${chain}|${currency}`

/**
 * The order's status and `late_payment` after its payments (in block order). `late_payment` is decided
 * once, when the order becomes PAID, by the block time of the payment that completed it; later payments
 * (dust after expiry) do not change it.
 */
export const settle = (
  before: OrderBefore,
  assets: ReadonlyArray<AcceptedAsset>,
  payments: ReadonlyArray<OrderPayment>
) => {
  const accepted = new Set(assets.map((a) => key(a.chain, a.currency)))
  const counted = payments.filter((p) => accepted.has(key(p.chain, p.currency)))
  const paid = new Map<string, Decimal>()
  let completing: OrderPayment | undefined
  for (const payment of counted.filter((p) => p.status === "confirmed")) {
    const k = key(payment.chain, payment.currency)
    paid.set(k, (paid.get(k) ?? new Exact(0)).plus(payment.amount))
    if (completing === undefined && covers(assets, (a) => paid.get(key(a.chain, a.currency)) ?? 0)) completing = payment
  }
  const status: OrderStatus =
    completing !== undefined
      ? "PAID"
      : counted.some((p) => p.status === "pending")
        ? "CONFIRMING"
        : before.expired
          ? paid.size > 0
            ? "PARTIALLY_PAID"
            : "EXPIRED"
          : "PENDING"
  const latePayment =
    status !== "PAID"
      ? false
      : before.status === "PAID"
        ? before.latePayment
        : completing?.blockTime !== null &&
          completing?.blockTime !== undefined &&
          completing.blockTime > before.expireAt
  return { status, latePayment }
}

/**
 * What the confirmed payments are worth in the order's currency: Σ paid_i × amount / asked_i over its
 * accepted assets, summed exactly (one division, at the end) and shown at the order currency's precision,
 * rounded down — an exact payment shows exactly the amount (three payments of a third: 1.000000), and
 * nothing shows more than was paid. Nothing confirmed: "0".
 */
export const paidValue = (
  orderAmount: string,
  assets: ReadonlyArray<AcceptedAsset>,
  payments: ReadonlyArray<OrderPayment>,
  digits: number
): string => {
  const asked = assets.map((a) => new Exact(a.asked))
  if (asked.some((a) => a.lte(0))) return "0"
  const paidOf = (asset: AcceptedAsset) =>
    payments
      .filter((p) => p.status === "confirmed" && p.chain === asset.chain && p.currency === asset.currency)
      .reduce((s, p) => s.plus(p.amount), new Exact(0))
  const all = asked.reduce((p, a) => p.times(a), new Exact(1))
  const numerator = assets.reduce(
    (s, asset, i) => s.plus(paidOf(asset).times(asked.reduce((p, a, j) => (i === j ? p : p.times(a)), new Exact(1)))),
    new Exact(0)
  )
  if (numerator.isZero()) return "0"
  return numerator.times(orderAmount).div(all).toFixed(digits, Decimal.ROUND_DOWN)
}
