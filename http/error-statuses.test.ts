import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { ApproverNotAllowed, WithdrawalNotFound, WithdrawalNotPending } from "../custody/withdrawal-errors.js"
import { OrderNotFound } from "../src/orders/order-errors.js"
import { categorized, toCategory } from "./error-statuses.js"

describe("the edge's table of named errors", () => {
  it("turns a named error into its category carrying the same text", () => {
    const notFound = toCategory(new WithdrawalNotFound({ withdrawalId: "wdr_1" }))
    expect(notFound._tag).toBe("NotFound")
    expect(notFound.error).toBe("withdrawal wdr_1 not found")
    const decided = toCategory(
      new WithdrawalNotPending({ withdrawalId: "wdr_1", status: "APPROVED", decision: "REJECTED" })
    )
    expect([decided._tag, decided.error]).toEqual([
      "Conflict",
      "withdrawal wdr_1 is APPROVED: only a PENDING withdrawal can be rejected"
    ])
    expect(toCategory(new ApproverNotAllowed({ reason: "no" }))._tag).toBe("Forbidden")
  })

  it.effect("categorized maps only named failures", () =>
    Effect.gen(function* () {
      const failed = yield* Effect.either(categorized(new OrderNotFound({ orderId: "ord_1" })))
      expect(Either.isLeft(failed) && [failed.left._tag, failed.left.error]).toEqual([
        "NotFound",
        "order ord_1 not found"
      ])
    })
  )
})
