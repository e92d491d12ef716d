import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/** A row as the driver gives it: a bigint column arrives as its text. */
const BlockRow = Schema.Struct({ number: Schema.BigInt, hash: Schema.String })

describe("rows", () => {
  it.effect("decodeAll decodes every row, converting its columns", () =>
    Effect.gen(function* () {
      const rows = yield* decodeAll(BlockRow)([
        { number: "18446744073709551617", hash: "0xa" },
        { number: "2", hash: "0xb" }
      ])
      expect(rows).toEqual([
        { number: 18446744073709551617n, hash: "0xa" },
        { number: 2n, hash: "0xb" }
      ])
    })
  )

  it.effect("a row that does not decode is a defect, not a failure", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(decodeAll(BlockRow)([{ number: "2", hash: "0xb" }, { number: "two" }]))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      const first = yield* Effect.exit(decodeFirst(BlockRow)([{ number: null, hash: "0xa" }]))
      expect(Exit.isFailure(first) && Cause.isDie(first.cause)).toBe(true)
    })
  )

  it.effect("decodeFirst gives the first row, none when there is no row", () =>
    Effect.gen(function* () {
      expect(yield* decodeFirst(BlockRow)([])).toEqual(Option.none())
      expect(
        yield* decodeFirst(BlockRow)([
          { number: "7", hash: "0xa" },
          { number: "8", hash: "0xb" }
        ])
      ).toEqual(Option.some({ number: 7n, hash: "0xa" }))
    })
  )

  it.effect("decodeScalar gives a column of the first row, its fallback when there is no row", () =>
    Effect.gen(function* () {
      const count = decodeScalar(Schema.Struct({ n: Schema.NumberFromString }), "n", () => 0)
      expect(yield* count([{ n: "42" }])).toBe(42)
      expect(yield* count([])).toBe(0)
    })
  )
})
