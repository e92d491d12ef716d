import { Either } from "effect"
import { fitsPrecision, MoneyDecimal } from "../src/money.js"

/**
 * A refund's amount in the asset refunded, and the limit it must keep: pure arithmetic, shared by the
 * creation (under the order's lock) and its tests.
 */

/**
 * What a request asks, in the asset: `amount` as given (at most the asset's `digits`), or `amount × rate`
 * (amount in the order's currency, rate in asset units per order unit) rounded down at `digits` — the
 * customer is never given a fraction the asset cannot carry, and the merchant never more than it stated.
 * None: the request asks for all that is left. A refusal says why.
 */
export const askedAmount = (
  request: { readonly amount?: string | undefined; readonly rate?: string | undefined },
  digits: number,
  assetKey: string
): Either.Either<MoneyDecimal | undefined, string> => {
  if (request.rate !== undefined) {
    if (request.amount === undefined)
      return Either.left(
        "rate converts amount from the order's currency: give amount (in the order's currency) with it"
      )
    if (new MoneyDecimal(request.rate).isZero()) return Either.left("rate must be greater than zero")
    const converted = new MoneyDecimal(request.amount)
      .times(request.rate)
      .toDecimalPlaces(digits, MoneyDecimal.ROUND_DOWN)
    return converted.isZero()
      ? Either.left(`${request.amount} × ${request.rate} is 0 at the ${digits} fractional digits of ${assetKey}`)
      : Either.right(converted)
  }
  if (request.amount === undefined) return Either.right(undefined)
  if (!fitsPrecision(request.amount, digits))
    return Either.left(
      `amount ${request.amount} has more than ${digits} fractional digits, the precision of ${assetKey}`
    )
  const amount = new MoneyDecimal(request.amount)
  return amount.isZero() ? Either.left("amount must be greater than zero") : Either.right(amount)
}

/** What an order may still refund in one asset: confirmed paid less what its refunds hold (not CANCELLED, EXPIRED or FAILED). */
export interface Refundable {
  readonly paid: MoneyDecimal
  readonly held: MoneyDecimal
}

/**
 * The amount a refund locks: what was asked, or all that is left; refused when nothing is left or it asks
 * more than is left (never more than was paid and not yet refunded).
 */
export const withinLimit = (
  asked: MoneyDecimal | undefined,
  refundable: Refundable,
  what: { readonly orderId: string; readonly chain: string; readonly currency: string },
  /** The asset's amount precision: "all that is left" is cut down to it (what is locked is what is stored). */
  digits: number
): Either.Either<MoneyDecimal, string> => {
  const left = refundable.paid.minus(refundable.held)
  // a deposit may carry more digits than the asset's precision (18-decimal BEP20 tokens): the rest stays paid
  const amount = asked ?? MoneyDecimal.max(left, 0).toDecimalPlaces(digits, MoneyDecimal.ROUND_DOWN)
  if (amount.lessThanOrEqualTo(0) && asked === undefined)
    return Either.left(
      `nothing is left to refund in ${what.chain}-${what.currency} for order ${what.orderId}: paid ${refundable.paid.toFixed()}, refunded or being refunded ${refundable.held.toFixed()}`
    )
  if (amount.greaterThan(left))
    return Either.left(
      `a refund of ${amount.toFixed()} ${what.currency} is more than the ${MoneyDecimal.max(left, 0).toFixed()} ${what.currency} paid to order ${what.orderId} on ${what.chain} and not yet refunded (paid ${refundable.paid.toFixed()}, refunded or being refunded ${refundable.held.toFixed()})`
    )
  return Either.right(amount)
}
