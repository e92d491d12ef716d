import type { OrderStatus } from "../../src/domain/order.js"
import { fromBaseUnits, toBaseUnits } from "../../src/money.js"
import type { AppliedStatus, ReceiverRecord } from "./documented-receiver.js"
import type { Violation } from "./invariants.js"

/** A payment of a few base units the customer sent to an order's address after it was PAID. */
export interface DustPayment {
  readonly orderId: string
  readonly chain: string
  readonly txHash: string
  readonly to: string
  /** Decimal, as paid. */
  readonly amount: string
  /** The asset's decimals on chain, and the precision the order's currency is shown at. */
  readonly decimals: number
  readonly precision: number
}

/** How far along an order is: a status may only move up, except a reversal before PAID. */
const RANK: Record<OrderStatus, number> = { PENDING: 0, CONFIRMING: 1, PARTIALLY_PAID: 2, EXPIRED: 2, PAID: 3 }

const backwards = (before: AppliedStatus, after: AppliedStatus) =>
  RANK[after.status] < RANK[before.status] && !(after.event === "payment.reversed" && before.status !== "PAID")

const sameAddress = (a: string, b: string) => (a.startsWith("0x") ? a.toLowerCase() === b.toLowerCase() : a === b)

/**
 * What the merchant's documented receiver must have seen by the end (issue 53): each order fulfilled at most
 * once, and on one event only (`order.paid` under one key); every PAID order fulfilled exactly once (after the
 * retries of a receiver that failed now and then), and nothing fulfilled that is not PAID; per order the
 * statuses it applied never go backwards (PAID never left; only a reversal lowers one before PAID), and no
 * event of an order processed after a later one (delivered in order); every dust payment after PAID announced
 * as `payment.overpaid` naming it, and its order showing the overpayment — `overpaid_amount` the dust summed
 * and shown at the currency's precision, rounded down (the order was paid exactly before: anything beyond is
 * dust), so absent when all of it is below that precision (a few wei of an 18-decimal token shown at 6).
 */
export const checkFulfilment = (input: {
  readonly record: ReceiverRecord
  /** The orders PAID in the database at the end. */
  readonly paidOrders: ReadonlyArray<string>
  /** The dust payments the chains hold. */
  readonly dust: ReadonlyArray<DustPayment>
  /** Each dusted order's `overpaid_amount` as the API shows it at the end (undefined: absent). */
  readonly overpaidAmounts: ReadonlyMap<string, string | undefined>
}): ReadonlyArray<Violation> => {
  const { record } = input
  const violations: Array<Violation> = []
  const add = (invariant: string, detail: string) => violations.push({ invariant, detail })

  for (const [orderId, times] of record.fulfilments)
    if (times > 1) add("each order fulfilled at most once", `order ${orderId} was fulfilled ${times} times`)
  for (const [orderId, keys] of record.fulfilEvents)
    if (keys.size > 1)
      add("each order fulfilled at most once", `order ${orderId} was announced to fulfil under ${[...keys].join(", ")}`)
  const paid = new Set(input.paidOrders)
  for (const orderId of paid)
    if ((record.fulfilments.get(orderId) ?? 0) !== 1)
      add(
        "every PAID order fulfilled exactly once",
        `order ${orderId} is PAID and was fulfilled ${record.fulfilments.get(orderId) ?? 0} times`
      )
  for (const orderId of record.fulfilments.keys())
    if (!paid.has(orderId)) add("every PAID order fulfilled exactly once", `order ${orderId} was fulfilled, not PAID`)

  for (const [orderId, applied] of record.applied)
    applied.forEach((after, i) => {
      const before = applied[i - 1]
      if (before !== undefined && backwards(before, after))
        add(
          "an order's status never goes backwards",
          `order ${orderId}: ${before.status} (${before.event}, #${before.sequence}) then ${after.status} (${after.event}, #${after.sequence})`
        )
    })
  for (const key of record.older)
    add("one order's events in order", `${key} was delivered after a later event of its order was applied`)
  for (const refused of record.refused) add("every delivery verifies with the kit", refused)

  for (const dust of input.dust)
    if (!record.overpaid.some((o) => o.txHash === dust.txHash && sameAddress(o.toAddress, dust.to)))
      add(
        "every dust payment is an overpayment",
        `${dust.chain} ${dust.txHash} (${dust.amount} to order ${dust.orderId}): no payment.overpaid names it`
      )
  const dustOf = new Map<string, Array<DustPayment>>()
  for (const dust of input.dust) dustOf.set(dust.orderId, [...(dustOf.get(dust.orderId) ?? []), dust])
  for (const [orderId, payments] of dustOf) {
    const first = payments[0]
    if (first === undefined) continue
    const units = payments.reduce((sum, p) => sum + toBaseUnits(p.amount, p.decimals), 0n)
    const shown = units / 10n ** BigInt(first.decimals - first.precision)
    const given = input.overpaidAmounts.get(orderId)
    const expected = shown === 0n ? undefined : fromBaseUnits(shown, first.precision)
    const givenUnits = given === undefined ? 0n : toBaseUnits(given, first.precision)
    if (givenUnits !== shown)
      add(
        "every dust payment is an overpayment",
        `order ${orderId}: overpaid_amount ${given ?? "absent"} after ${payments.length} dust payments of ${units} base units (expected ${expected ?? "absent"})`
      )
  }
  return violations
}

/** The line's account of the receiver: what failed, what was processed, who was fulfilled, the dust. */
export const fulfilmentDetail = (record: ReceiverRecord, dust: ReadonlyArray<DustPayment>): string => {
  const failed = [...record.faults.values()].reduce((a, b) => a + b, 0)
  const fulfilled = [...record.fulfilments.values()].reduce((a, b) => a + b, 0)
  const paidBodies = [...record.paidBodies.values()].reduce((a, b) => a + b, 0)
  const dusted = new Set(dust.map((d) => d.orderId)).size
  const belowPrecision = dust.filter(
    (d) => toBaseUnits(d.amount, d.decimals) < 10n ** BigInt(d.decimals - d.precision)
  ).length
  return (
    `the documented receiver (client/examples' receiveOnce + fulfilOnce) failed ${failed} of ${record.counts.deliveries} deliveries ` +
    `(${[...record.faults].map(([kind, n]) => `${kind} ${n}`).join(", ") || "none"}), processed ${record.counts.processed} events, answered ${record.counts.duplicates} duplicates; ` +
    `${fulfilled} orders fulfilled (a receiver fulfilling on every body saying PAID would have acted ${paidBodies} times); ` +
    `${dust.length} dust payments after PAID to ${dusted} orders (${belowPrecision} below the currency's precision), ${record.overpaid.length} payment.overpaid`
  )
}
