import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { covers, type OrderPayment, paidValue, settle, underpaidAmount } from "./order-settlement.js"
import { parseSetting, TOLERANCE_OFF, toleranceFor } from "./underpayment-tolerance.js"

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
  it("paidBy names the confirmed payments that paid the order, up to the one that completed it; later ones paid beyond it", () => {
    const keyed = (key: string, amount: string, minute: number, status?: "pending" | "confirmed") => ({
      ...pay("USDT", amount, minute, status),
      key
    })
    const payments = [
      keyed("a", "0.4", -3),
      keyed("b", "0.6", -2),
      keyed("dust", "0.000001", -1),
      keyed("c", "1", 0, "pending")
    ]
    expect(settle(before, [usdt], payments).paidBy).toEqual(["a", "b"])
    expect(settle(before, [usdt], payments.slice(0, 1)).paidBy).toEqual([])
  })

  it("three payments of a third make a whole: 1 USDT asked as 3 TRX, paid 1 + 1 + 1 TRX, is PAID", () => {
    expect(settle(before, [trx], [pay("TRX", "1", -3), pay("TRX", "1", -2), pay("TRX", "1", -1)])).toEqual({
      status: "PAID",
      latePayment: false,
      paidBy: []
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
    expect(paidLate).toEqual({ status: "PAID", latePayment: true, paidBy: [] })
    // paid on time; dust from anyone after expiry does not flip it
    const onTime = settle(before, [usdt], [pay("USDT", "1", -1)])
    expect(onTime).toEqual({ status: "PAID", latePayment: false, paidBy: [] })
    const dust = settle(
      { ...before, status: "PAID", expired: true },
      [usdt],
      [pay("USDT", "1", -1), pay("USDT", "0.000001", 30)]
    )
    expect(dust).toEqual({ status: "PAID", latePayment: false, paidBy: [] })
  })

  it("pending payments keep an order CONFIRMING past expiry; what is confirmed decides after", () => {
    expect(settle({ ...before, expired: true }, [usdt], [pay("USDT", "0.5", -1, "pending")]).status).toBe("CONFIRMING")
    expect(settle({ ...before, expired: true }, [usdt], [pay("USDT", "0.5", -1)]).status).toBe("PARTIALLY_PAID")
    expect(settle({ ...before, expired: true }, [usdt], []).status).toBe("EXPIRED")
    // a payment in an asset the order does not accept does not count
    expect(settle(before, [usdt], [pay("TRX", "100", -1)]).status).toBe("PENDING")
  })
})

describe("underpayment tolerance (issue #35)", () => {
  const shortBy = (tolerance: string) => ({ ...usdt, asked: "100", tolerance })
  it("an order paid short by no more than its tolerance is PAID at the payment that brought it within", () => {
    const within = settle(before, [shortBy("1")], [pay("USDT", "60", -3), pay("USDT", "39", -2)])
    expect(within).toEqual({ status: "PAID", latePayment: false, paidBy: [] })
    expect(underpaidAmount("PAID", "100", "99")).toBe("1")
    // short by more: not paid; confirmed below the tolerance after expiry: PARTIALLY_PAID
    expect(settle(before, [shortBy("1")], [pay("USDT", "98.999999", -1)]).status).toBe("PENDING")
    expect(settle({ ...before, expired: true }, [shortBy("1")], [pay("USDT", "98.9", -1)]).status).toBe(
      "PARTIALLY_PAID"
    )
    // off (no tolerance, or "0"): the whole amount, as before
    expect(settle(before, [{ ...usdt, asked: "100" }], [pay("USDT", "99.999999", -1)]).status).toBe("PENDING")
    expect(settle(before, [shortBy("0")], [pay("USDT", "99.999999", -1)]).status).toBe("PENDING")
  })

  it("decided once, like late_payment: the payment within tolerance decides lateness; the rest of the money lowers underpaid_amount", () => {
    // within tolerance before expiry, the missing cent after it: not late, and nothing is lacking any more
    const payments = [pay("USDT", "99.5", -1), pay("USDT", "0.5", 5)]
    expect(settle({ ...before, status: "PAID", expired: true }, [shortBy("1")], payments)).toEqual({
      status: "PAID",
      latePayment: false,
      paidBy: []
    })
    expect(underpaidAmount("PAID", "100", paidValue("100", [shortBy("1")], payments, 6))).toBeNull()
    // brought within its tolerance after expiry: late, by that payment
    expect(
      settle({ ...before, expired: true }, [shortBy("1")], [pay("USDT", "50", -1), pay("USDT", "49.2", 2)])
    ).toEqual({ status: "PAID", latePayment: true, paidBy: [] })
    // not PAID: no underpaid_amount, whatever is lacking; overpaid: none either
    expect(underpaidAmount("PARTIALLY_PAID", "100", "50")).toBeNull()
    expect(underpaidAmount("PAID", "100", "100.5")).toBeNull()
  })

  it("several assets: each unit paid counts by its own asset's tolerance (Σ paid_i / (asked_i − t_i) ≥ 1)", () => {
    const lenient = { chain: "TRC20", currency: "TRX", asked: "300", tolerance: "30" } // 10 %
    const strict = { chain: "TRC20", currency: "USDT", asked: "100", tolerance: "0" }
    const mixed = (trx: string, usd: string) =>
      settle(before, [lenient, strict], [pay("TRX", trx, -2), pay("USDT", usd, -1)])
    // 135 TRX is half of what TRX asks less its tolerance (270); 50 USDT half of USDT's 100: covered
    expect(mixed("135", "50").status).toBe("PAID")
    expect(mixed("135", "49.999999").status).toBe("PENDING")
    // a crumb in the lenient asset does not lend its 10 % to the strict one
    expect(mixed("0.000001", "90").status).toBe("PENDING")
    // all in the lenient asset: its own tolerance; all in the strict one: the whole amount
    expect(settle(before, [lenient, strict], [pay("TRX", "270", -1)]).status).toBe("PAID")
    expect(settle(before, [lenient, strict], [pay("USDT", "99.99", -1)]).status).toBe("PENDING")
    // the order currency's view of the mixed payment: 45 + 50 of 100 paid, 5 lacking
    const paid = paidValue("100", [lenient, strict], [pay("TRX", "135", -2), pay("USDT", "50", -1)], 6)
    expect([paid, underpaidAmount("PAID", "100", paid)]).toEqual(["95.000000", "5"])
  })
})

describe("an asset's tolerance from the merchant's setting", () => {
  it("percent and/or amount: both limits hold, never above a tenth, at the asset's precision, off by default", () => {
    expect(toleranceFor("200", TOLERANCE_OFF, 6)).toBe("0")
    expect(toleranceFor("200", { percent: "0.5", amount: null }, 6)).toBe("1")
    expect(toleranceFor("200", { percent: null, amount: "1.5" }, 6)).toBe("1.5")
    // both: the smaller shortfall (1 % of 200 = 2 > 1.5; 1 % of 50 = 0.5 < 1.5)
    expect(toleranceFor("200", { percent: "1", amount: "1.5" }, 6)).toBe("1.5")
    expect(toleranceFor("50", { percent: "1", amount: "1.5" }, 6)).toBe("0.5")
    // an absolute amount above a tenth of a small order allows a tenth
    expect(toleranceFor("5", { percent: null, amount: "1" }, 6)).toBe("0.5")
    // rounded down at the asset's precision; an amount too small to allow anything allows nothing
    expect(toleranceFor("0.333333", { percent: "1", amount: null }, 6)).toBe("0.003333")
    expect(toleranceFor("0.000001", { percent: "10", amount: null }, 6)).toBe("0")
  })

  it("what a person typed: percent 0 to 10 (more is refused), amount ≥ 0 at the asset's precision, empty is off", () => {
    expect(parseSetting("", "", 6)).toEqual(Either.right(TOLERANCE_OFF))
    expect(parseSetting(" 0.50 % ", "1.000", 6)).toEqual(Either.right({ percent: "0.5", amount: "1" }))
    expect(parseSetting("10", "", 6)).toEqual(Either.right({ percent: "10", amount: null }))
    for (const [percent, amount] of [
      ["10.01", ""],
      ["-1", ""],
      ["1e2", ""],
      ["abc", ""],
      ["0.12345", ""],
      ["", "-1"],
      ["", "0.0000001"],
      ["", "=1+1"]
    ] as const) {
      expect(Either.isLeft(parseSetting(percent, amount, 6)), `${percent} / ${amount}`).toBe(true)
    }
  })
})
