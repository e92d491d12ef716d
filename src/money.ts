import { Decimal } from "decimal.js"
import { Schema } from "effect"

/**
 * Money is a fixed-point decimal string on the wire, a `Decimal` in arithmetic and a bigint of base
 * units on chain; never a JS number.
 */
export const MoneyDecimal = Decimal.clone({
  precision: 80,
  rounding: Decimal.ROUND_DOWN,
  toExpNeg: -100,
  toExpPos: 100
})
export type MoneyDecimal = Decimal

const DECIMAL_STRING = /^\d+(\.\d+)?$/

export const DecimalString = Schema.String.pipe(
  Schema.pattern(DECIMAL_STRING, {
    message: () => 'must be a non-negative decimal string such as "12.5" (digits, optionally a dot and digits)'
  })
).annotations({
  identifier: "DecimalString",
  description: "Non-negative fixed-point decimal: digits, optionally followed by a dot and digits",
  examples: ["12.5"]
})

/** The largest amount a request may carry (10^15 of any asset) and the most fractional digits (18). */
const MAX_REQUEST_AMOUNT = new MoneyDecimal("1e15")

/** An amount in a request: a DecimalString below 10^15 with at most 18 fractional digits (no 10^38 USDT order). */
export const RequestAmount = DecimalString.pipe(
  Schema.filter(
    (value) =>
      (value.length <= 40 && new MoneyDecimal(value).lessThan(MAX_REQUEST_AMOUNT) && fractionDigits(value) <= 18) ||
      "must be below 1000000000000000 with at most 18 fractional digits"
  )
).annotations({
  identifier: "RequestAmount",
  jsonSchema: { type: "string", pattern: "^\\d{1,15}(\\.\\d{1,18})?$", maxLength: 34 }
})

/** Number of digits after the dot as written, trailing zeros included ("1.50" has 2). */
export const fractionDigits = (value: string): number => {
  const dot = value.indexOf(".")
  return dot === -1 ? 0 : value.length - dot - 1
}

/** True when `value` needs no more than `precision` fractional digits (trailing zeros do not count). */
export const fitsPrecision = (value: string, precision: number): boolean =>
  new MoneyDecimal(value).decimalPlaces() <= precision

/** Renders a decimal with exactly `digits` fractional digits (for fee quotes and balances). */
export const toFixedDigits = (value: Decimal.Value, digits: number): string => new MoneyDecimal(value).toFixed(digits)

/** Canonical form: no trailing zeros, no trailing dot ("12.500" → "12.5"). */
export const normalizeDecimal = (value: Decimal.Value): string => new MoneyDecimal(value).toFixed()

export const toBaseUnits = (value: Decimal.Value, decimals: number): bigint => {
  const scaled = new MoneyDecimal(value).times(new MoneyDecimal(10).pow(decimals))
  if (!scaled.isInteger()) throw new RangeError(`${String(value)} has more than ${decimals} fractional digits`)
  return BigInt(scaled.toFixed(0))
}

/**
 * Base units as a decimal string in canonical form ("12500000", 6 → "12.5"): the point moved in the digits
 * themselves, exact at any size and a few times cheaper than a Decimal division (the indexer formats
 * every attributed transfer with it).
 */
export const fromBaseUnits = (units: bigint, decimals: number): string => {
  const digits = (units < 0n ? -units : units).toString().padStart(decimals + 1, "0")
  const whole = digits.slice(0, digits.length - decimals)
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "")
  return `${units < 0n ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`
}
