import { describe, expect, it } from "@effect/vitest"
import { fromBaseUnits, MoneyDecimal, toBaseUnits } from "./money.js"

describe("money", () => {
  it("base units to a canonical decimal string, exact at any size, and back", () => {
    expect(fromBaseUnits(12_500_000n, 6)).toBe("12.5")
    expect(fromBaseUnits(1n, 18)).toBe("0.000000000000000001")
    expect(fromBaseUnits(0n, 6)).toBe("0")
    expect(fromBaseUnits(1_000_000n, 6)).toBe("1")
    expect(fromBaseUnits(42n, 0)).toBe("42")
    expect(fromBaseUnits(-1_500n, 3)).toBe("-1.5")
    // more digits than a Decimal of 80 significant digits holds: still exact
    const huge = 10n ** 90n + 1n
    expect(fromBaseUnits(huge, 18)).toBe(`1${"0".repeat(72)}.${"0".repeat(17)}1`)
    // the same answer as a Decimal division wherever that one is exact
    let seed = 7n
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n
      const units = seed >> BigInt(i % 60)
      const decimals = i % 19
      const text = fromBaseUnits(units, decimals)
      expect(text).toBe(new MoneyDecimal(units.toString()).div(new MoneyDecimal(10).pow(decimals)).toFixed())
      expect(toBaseUnits(text, decimals)).toBe(units)
    }
  })
})
