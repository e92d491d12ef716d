import { Decimal } from "decimal.js"

/**
 * An order's status from its payments (docs/reference/decisions.md "Orders"), decided in each asset's own units: an
 * order is paid when the confirmed amounts cover it, Σ paid / asked ≥ 1 over its accepted assets,
 * compared exactly (never through values rounded into the order's currency: three payments of a third
 * make a whole).
 *
 * Underpayment tolerance (src/orders/underpayment-tolerance.ts): each accepted asset may allow a shortfall
 * t_i, fixed when the order was made. The order is then paid when Σ paid_i / (asked_i − t_i) ≥ 1 — the
 * same rule over what each asset asks less its tolerance. Paid in one asset that is paid_i ≥ asked_i − t_i;
 * paid in several, each unit paid in an asset counts by that asset's own tolerance, so a crumb paid in a
 * lenient asset never lends its tolerance to the rest paid in a strict one.
 */

export type OrderStatus = "PENDING" | "CONFIRMING" | "PAID" | "EXPIRED" | "PARTIALLY_PAID"

export interface AcceptedAsset {
  readonly chain: string
  readonly currency: string
  /** What the order asks in this asset, in its units. */
  readonly asked: string
  /** The shortfall it allows (the underpayment tolerance fixed at creation), in its units; absent or "0": none. */
  readonly tolerance?: string | undefined
}

export interface OrderPayment {
  readonly chain: string
  readonly currency: string
  readonly amount: string
  readonly status: "pending" | "confirmed"
  /** When its block was made (chain time); null for rows written before block times were kept. */
  readonly blockTime: Date | null
  /** What names the payment to the caller (its transfer); `paidBy` lists these. */
  readonly key?: string
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

/** What each asset asks less the shortfall it allows: what pays the order. */
const withinTolerance = (assets: ReadonlyArray<AcceptedAsset>): ReadonlyArray<AcceptedAsset> =>
  assets.map((a) => ({ ...a, asked: new Exact(a.asked).minus(a.tolerance ?? 0).toFixed() }))

/**
 * The order's status and `late_payment` after its payments (confirmed ones in the order they were confirmed). The order is PAID from the
 * payment that brought the confirmed total within its tolerance (the whole amount when it has none);
 * `late_payment` is decided once, then, by that payment's block time; later payments (dust after expiry,
 * the rest of an underpaid amount) do not change it, nor undo PAID. `paidBy`: the keys of the confirmed
 * payments that paid a PAID order, up to and including that one; the others paid beyond it (overpayments).
 */
export const settle = (
  before: OrderBefore,
  assets: ReadonlyArray<AcceptedAsset>,
  payments: ReadonlyArray<OrderPayment>
) => {
  const payable = withinTolerance(assets)
  const accepted = new Set(assets.map((a) => key(a.chain, a.currency)))
  const counted = payments.filter((p) => accepted.has(key(p.chain, p.currency)))
  const paid = new Map<string, Decimal>()
  let completing: OrderPayment | undefined
  const paidBy: Array<string> = []
  for (const payment of counted.filter((p) => p.status === "confirmed")) {
    const k = key(payment.chain, payment.currency)
    paid.set(k, (paid.get(k) ?? new Exact(0)).plus(payment.amount))
    if (completing === undefined && payment.key !== undefined) paidBy.push(payment.key)
    if (completing === undefined && covers(payable, (a) => paid.get(key(a.chain, a.currency)) ?? 0))
      completing = payment
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
  return { status, latePayment, paidBy: completing === undefined ? [] : paidBy }
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

/**
 * What a PAID order accepted within its tolerance still lacks, in the order's currency: amount − paid
 * (paid as `paidValue` shows it), or null when nothing is lacking or the order is not PAID. It follows the
 * money: a later payment lowers it, and one that completes the amount leaves nothing (the order stays PAID).
 */
export const underpaidAmount = (status: OrderStatus, amount: string, paid: string): string | null =>
  status === "PAID" && new Exact(paid).lt(amount) ? new Exact(amount).minus(paid).toFixed() : null
