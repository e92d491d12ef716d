import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { MoneyDecimal } from "../src/money.js"
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
        withinLimit(asked === undefined ? undefined : new MoneyDecimal(asked), held(paid, refunded), ORDER),
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
  })
})
