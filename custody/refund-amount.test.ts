import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { MoneyDecimal } from "../src/money.js"
import { refundedValue } from "../src/orders/order-view.js"
import { askedAmount, withinLimit } from "./refund-amount.js"

const ORDER = { orderId: "ord_1", chain: "TRC20", currency: "USDT" }
const held = (paid: string, refunded: string) => ({ paid: new MoneyDecimal(paid), held: new MoneyDecimal(refunded) })
const text = (e: Either.Either<MoneyDecimal | undefined, string>) =>
  Either.match(e, { onLeft: (reason) => `refused: ${reason}`, onRight: (a) => a?.toFixed() ?? "all that is left" })

describe("a refund's amount", () => {
  it("as given at the asset's precision, or amount × rate rounded down at it; all that is left when not given", () => {
    expect(text(askedAmount({ amount: "12.5" }, 6, "TRC20-USDT"))).toBe("12.5")
    expect(text(askedAmount({}, 6, "TRC20-USDT"))).toBe("all that is left")
    // 10 EUR at 1.08333339 USDT per EUR is 10.8333339 USDT: 10.833333 at six digits, never rounded up
    expect(text(askedAmount({ amount: "10", rate: "1.08333339" }, 6, "TRC20-USDT"))).toBe("10.833333")
    expect(text(askedAmount({ amount: "0.3", rate: "0.0000001" }, 6, "TRC20-USDT"))).toMatch(
      /refused: .* is 0 at the 6/
    )
    expect(text(askedAmount({ amount: "1.1234567" }, 6, "TRC20-USDT"))).toMatch(/more than 6 fractional digits/)
    expect(text(askedAmount({ amount: "0" }, 6, "TRC20-USDT"))).toMatch(/greater than zero/)
    expect(text(askedAmount({ rate: "1.1" }, 6, "TRC20-USDT"))).toMatch(/give amount/)
    expect(text(askedAmount({ amount: "5", rate: "0" }, 6, "TRC20-USDT"))).toMatch(/rate must be greater than zero/)
  })

  it("never more than confirmed paid less what refunds not CANCELLED, EXPIRED or FAILED hold", () => {
    const limit = (asked: string | undefined, paid: string, refunded: string) =>
      Either.match(
        withinLimit(asked === undefined ? undefined : new MoneyDecimal(asked), held(paid, refunded), ORDER, 6),
        {
          onLeft: (reason) => `refused: ${reason}`,
          onRight: (a) => a.toFixed()
        }
      )
    expect(limit("30", "100", "0")).toBe("30")
    expect(limit("70", "100", "30")).toBe("70")
    expect(limit("70.000001", "100", "30")).toBe(
      "refused: a refund of 70.000001 USDT is more than the 70 USDT paid to order ord_1 on TRC20 and not yet refunded (paid 100, refunded or being refunded 30)"
    )
    expect(limit(undefined, "100", "30")).toBe("70")
    expect(limit(undefined, "100", "100")).toMatch(/^refused: nothing is left to refund in TRC20-USDT/)
    expect(limit("1", "0", "0")).toMatch(/^refused: a refund of 1 USDT is more than the 0 USDT/)
    // all that is left, at the asset's precision: digits a deposit carries beyond it stay paid, never locked
    expect(limit(undefined, "10.123456789", "0")).toBe("10.123456")
    expect(limit(undefined, "10.0000005", "10")).toMatch(/^refused: nothing is left to refund in TRC20-USDT/)
  })

  it("an order's refunded_amount: each accepted asset's refunds at the order's price of it, rounded down; others not counted", () => {
    const asset = (chain: "TRC20" | "BEP20", currency: string, amount: string, position: number) => ({
      order_id: "ord_1",
      position,
      chain,
      currency,
      wallet_id: "wal",
      pay_address: "addr",
      amount,
      pay_qrcode: null,
      underpayment_tolerance: "0"
    })
    const total = (chain: "TRC20" | "BEP20", currency: string, amount: string) => ({
      order_id: "ord_1",
      chain,
      currency,
      total: amount
    })
    // an order of 10 USDT payable as 10 USDT or 0.02 BNB
    const assets = [asset("TRC20", "USDT", "10", 0), asset("BEP20", "BNB", "0.02", 1)]
    expect(refundedValue("10", assets, [total("TRC20", "USDT", "3")], 6)).toBe("3.000000")
    expect(refundedValue("10", assets, [total("TRC20", "USDT", "2"), total("BEP20", "BNB", "0.01")], 6)).toBe(
      "7.000000"
    )
    // thirds stay exact until the one rounding, down
    expect(refundedValue("10", [asset("BEP20", "BNB", "0.03", 0)], [total("BEP20", "BNB", "0.01")], 6)).toBe("3.333333")
    // a token the order did not ask for, sent to its address and refunded: not in paid_amount, not here either
    expect(refundedValue("10", assets, [total("BEP20", "USDT", "4")], 6)).toBe("0")
  })
})
