import { describe, expect, it } from "@effect/vitest"
import { followingBudget } from "./request-budget.js"

describe("the node calls an indexer's configuration costs", () => {
  // following TRON every 500 ms cost ~4.7 calls a second, ~400,000 a day, against TronGrid's 100,000 (#32 item 4)
  it("is said per second and per day, so a poll interval can be chosen within a provider's quota", () => {
    const fast = followingBudget("TRC20", 500, false)
    expect(fast.perSecond).toBeCloseTo(4.67, 2)
    expect(fast.perDay).toBe(403_200)
    expect(fast.text).toBe(
      "TRC20 indexer following the head: about 4.7 node calls a second, 403,200 a day (polling every 500 ms: head and solidified headers per poll; a block's body and its transaction infos); catching up costs more while it lasts"
    )
    // polling every 4.5 s fits TronGrid's free 100,000 a day
    expect(followingBudget("TRC20", 4_500, false).perDay).toBeLessThan(100_000)
    // BEP20 with traces: one more call per block
    expect(
      followingBudget("BEP20", 1_000, true).perSecond - followingBudget("BEP20", 1_000, false).perSecond
    ).toBeCloseTo(1 / 0.75, 5)
  })
})
