import { SqlClient } from "@effect/sql"
import { Effect, Either } from "effect"
import { AuditLog, type AuditActor } from "../audit/audit-log.js"
import type { AssetPolicy } from "../domain/asset-policy.js"
import { fitsPrecision, MoneyDecimal, normalizeDecimal } from "../money.js"
import { AssetStore } from "../stores/asset-store.js"
import { InvalidUnderpaymentTolerance } from "./order-errors.js"

/**
 * Underpayment tolerance (issue #35): how far short of an asset's amount a payment may fall and still pay
 * the order (a customer sending from an exchange loses the exchange's withdrawal fee). A merchant sets it
 * per asset, off by default: a percent of the amount and/or an absolute amount in the asset's units.
 *
 * When both are set, both limits hold: the smaller shortfall wins. A merchant who writes "1 USDT" and
 * "1 %" means "up to 1 USDT, and never more than 1 % of the order" — the percent keeps a flat allowance
 * from paying small orders, the amount keeps a percent from waiving a large sum. Whatever the setting, a
 * shortfall never exceeds a tenth of the amount (MAX_PERCENT), so a dust payment on an order smaller than
 * the absolute allowance never pays it.
 */

/** The largest percent a merchant may set, and the cap on any shortfall allowed. */
export const MAX_PERCENT = 10
/** Fractional digits a percent may have ("0.25" is fine, "0.12345" is not). */
const PERCENT_DIGITS = 4

/** A merchant's setting for one asset; null: that limit is not set. Both null: off. */
export interface ToleranceSetting {
  readonly percent: string | null
  readonly amount: string | null
}

export const TOLERANCE_OFF: ToleranceSetting = { percent: null, amount: null }

/** The setting as the asset policy shows it (absent: off). */
export const settingOf = (policy: Pick<AssetPolicy, "underpayment_tolerance">): ToleranceSetting => ({
  percent: policy.underpayment_tolerance?.percent ?? null,
  amount: policy.underpayment_tolerance?.amount ?? null
})

/**
 * The shortfall an order's asset allows, in the asset's units at its precision (rounded down): the smaller
 * of the percent of `asked` and the absolute amount (those set), never above MAX_PERCENT of `asked`; "0"
 * when the setting is off.
 */
export const toleranceFor = (asked: string, setting: ToleranceSetting, precision: number): string => {
  if (setting.percent === null && setting.amount === null) return "0"
  const amount = new MoneyDecimal(asked)
  const limits = [amount.times(MAX_PERCENT).div(100)]
  if (setting.percent !== null) limits.push(amount.times(setting.percent).div(100))
  if (setting.amount !== null) limits.push(new MoneyDecimal(setting.amount))
  const allowed = MoneyDecimal.min(...limits).toDecimalPlaces(precision, MoneyDecimal.ROUND_DOWN)
  // the column's check: a shortfall below the amount itself (an amount of one base unit allows none)
  return allowed.gte(amount) ? "0" : normalizeDecimal(allowed)
}

const DECIMAL = /^\d{1,15}(\.\d{1,18})?$/

/**
 * A setting from what a person typed (an empty field: that limit is off), or why it is refused: a percent
 * from 0 to 10 with at most four fractional digits, an amount of at least 0 at the asset's precision.
 */
export const parseSetting = (
  percentText: string,
  amountText: string,
  precision: number
): Either.Either<ToleranceSetting, string> => {
  const percent = percentText.trim().replace(/\s*%$/, "")
  const amount = amountText.trim()
  if (percent !== "") {
    if (!DECIMAL.test(percent)) return Either.left("the percent must be a number such as 0.5 (from 0 to 10)")
    if (new MoneyDecimal(percent).gt(MAX_PERCENT)) {
      return Either.left(`the percent may be at most ${MAX_PERCENT}: a larger shortfall is not a tolerance`)
    }
    if (!fitsPrecision(percent, PERCENT_DIGITS)) {
      return Either.left(`the percent may have at most ${PERCENT_DIGITS} fractional digits`)
    }
  }
  if (amount !== "") {
    if (!DECIMAL.test(amount)) return Either.left("the amount must be a non-negative number such as 1.5")
    if (!fitsPrecision(amount, precision)) {
      return Either.left(`the amount may have at most ${precision} fractional digits, the asset's precision`)
    }
  }
  return Either.right({
    percent: percent === "" ? null : normalizeDecimal(percent),
    amount: amount === "" ? null : normalizeDecimal(amount)
  })
}

/** In words, for the audit log and the console. */
export const describeSetting = (setting: ToleranceSetting, currency: string) =>
  setting.percent === null && setting.amount === null
    ? "off"
    : [
        ...(setting.percent === null ? [] : [`${setting.percent} %`]),
        ...(setting.amount === null ? [] : [`${setting.amount} ${currency}`])
      ].join(" and at most ")

/** Setting a merchant's tolerance for one of its enabled assets (the console, an owner or admin), audit-logged. */
export class UnderpaymentTolerances extends Effect.Service<UnderpaymentTolerances>()("facet/UnderpaymentTolerances", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* AssetStore
    const audit = yield* AuditLog

    const set = Effect.fn("UnderpaymentTolerances.set")(function* (
      merchantId: string,
      assetKey: string,
      typed: { readonly percent: string; readonly amount: string },
      actor: AuditActor
    ) {
      const rows = yield* Effect.orDie(store.listForMerchant(merchantId))
      // an asset checkout orders can be paid in: live, and enabled by the merchant
      const row = rows.find((r) => `${r.chain}-${r.currency}` === assetKey && r.merchant_enabled && r.status === "live")
      if (row === undefined) {
        return yield* new InvalidUnderpaymentTolerance({
          reason: `${assetKey} is not an asset enabled for you that checkout orders accept`
        })
      }
      const setting = parseSetting(typed.percent, typed.amount, row.amount_precision)
      if (Either.isLeft(setting)) return yield* new InvalidUnderpaymentTolerance({ reason: setting.left })
      // the setting and its audit record commit together
      yield* sql
        .withTransaction(
          Effect.zipRight(
            store.setUnderpaymentTolerance(merchantId, row.chain, row.currency, setting.right),
            audit.record(
              merchantId,
              actor,
              "policy.changed",
              `underpayment_tolerance:${assetKey}`,
              `underpayment tolerance of new ${assetKey} orders: ${describeSetting(setting.right, row.currency)}`
            )
          )
        )
        .pipe(Effect.orDie)
      return setting.right
    })

    return { set } as const
  }),
  dependencies: [AssetStore.Default, AuditLog.Default]
}) {}
