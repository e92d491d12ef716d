import { describe, expect, it } from "@effect/vitest"
import { covers, type OrderPayment, paidValue, settle } from "./order-settlement.js"

const expireAt = new Date("2026-11-22T12:00:00Z")
const before = { status: "PENDING" as const, latePayment: false, expireAt, expired: false }
const trx = { chain: "TRC20", currency: "TRX", asked: "3" }
const usdt = { chain: "TRC20", currency: "USDT", asked: "1" }
const pay = (
  currency: string,
  amount: string,
  minute: number,
  status: "pending" | "confirmed" = "confirmed"
): OrderPayment => ({
  chain: "TRC20",
  currency,
  amount,
  status,
  blockTime: new Date(expireAt.getTime() + minute * 60_000)
})

describe("order settlement in the assets' own units", () => {
  it("three payments of a third make a whole: 1 USDT asked as 3 TRX, paid 1 + 1 + 1 TRX, is PAID", () => {
    expect(settle(before, [trx], [pay("TRX", "1", -3), pay("TRX", "1", -2), pay("TRX", "1", -1)])).toEqual({
      status: "PAID",
      latePayment: false
    })
    expect(settle(before, [trx], [pay("TRX", "1", -3), pay("TRX", "1", -2), pay("TRX", "0.999999", -1)]).status).toBe(
      "PENDING"
    )
  })

  // before: each payment's value was rounded at 18 digits and added, and the order showed 0.999999999999999999
  it("paid_amount: at the order currency's precision, exact for an exact payment, never above what was paid", () => {
    const thirds = [pay("TRX", "1", -3), pay("TRX", "1", -2), pay("TRX", "1", -1)]
    expect(paidValue("1", [trx], thirds, 6)).toBe("1.000000")
    expect(paidValue("1", [trx], thirds.slice(0, 1), 6)).toBe("0.333333")
    expect(paidValue("1", [trx], [...thirds, pay("TRX", "1", 0, "pending")], 6)).toBe("1.000000")
    expect(paidValue("1", [trx, usdt], [pay("TRX", "1.5", -2), pay("USDT", "0.5", -1)], 6)).toBe("1.000000")
    expect(paidValue("12.5", [usdt], [], 6)).toBe("0")
  })

  it("fractions of several accepted assets add up exactly", () => {
    // 1/3 of the TRX and 2/3 of the USDT
    expect(covers([trx, usdt], (a) => (a.currency === "TRX" ? "1" : "0.666666666666666667"))).toBe(true)
    expect(covers([trx, usdt], (a) => (a.currency === "TRX" ? "1" : "0.666666666666666666"))).toBe(false)
  })

  it("late_payment comes from the block time of the payment that completed the amount, once", () => {
    const paidLate = settle({ ...before, expired: true }, [usdt], [pay("USDT", "0.4", -5), pay("USDT", "0.6", 2)])
    expect(paidLate).toEqual({ status: "PAID", latePayment: true })
    // paid on time; dust from anyone after expiry does not flip it
    const onTime = settle(before, [usdt], [pay("USDT", "1", -1)])
    expect(onTime).toEqual({ status: "PAID", latePayment: false })
    const dust = settle(
      { ...before, status: "PAID", expired: true },
      [usdt],
      [pay("USDT", "1", -1), pay("USDT", "0.000001", 30)]
    )
    expect(dust).toEqual({ status: "PAID", latePayment: false })
  })

  it("pending payments keep an order CONFIRMING past expiry; what is confirmed decides after", () => {
    expect(settle({ ...before, expired: true }, [usdt], [pay("USDT", "0.5", -1, "pending")]).status).toBe("CONFIRMING")
    expect(settle({ ...before, expired: true }, [usdt], [pay("USDT", "0.5", -1)]).status).toBe("PARTIALLY_PAID")
    expect(settle({ ...before, expired: true }, [usdt], []).status).toBe("EXPIRED")
    // a payment in an asset the order does not accept does not count
    expect(settle(before, [usdt], [pay("TRX", "100", -1)]).status).toBe("PENDING")
  })
})
