import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TestDatabaseLive } from "../../test/database.js"
import { delimitedColumn, type DelimitedType } from "./delimited-column.js"

describe("delimited columns", () => {
  layer(TestDatabaseLive, { excludeTestServices: true })((it) => {
    it.effect("arrive as the same values, NULLs and empty strings included, at any length", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const roundTrip = (type: DelimitedType, values: ReadonlyArray<string | number | boolean | null>) =>
          Effect.flatMap(delimitedColumn(sql, type, values), (column) =>
            Effect.map(
              sql<{
                v: string | null
                n: string
              }>`SELECT v::text AS v, n::text AS n FROM unnest(${column}) WITH ORDINALITY AS x (v, n) ORDER BY n`,
              (rows) => rows.map((r) => r.v)
            )
          )
        expect(yield* roundTrip("text", [])).toEqual([])
        expect(yield* roundTrip("text", [""])).toEqual([""])
        expect(yield* roundTrip("text", [null])).toEqual([null])
        expect(yield* roundTrip("text", ["TXyz", "", null, "0xAbC", "N"])).toEqual(["TXyz", "", null, "0xAbC", "N"])
        expect(yield* roundTrip("numeric", ["1.000001", null, "12345678901234567890.5"])).toEqual([
          "1.000001",
          null,
          "12345678901234567890.5"
        ])
        expect(yield* roundTrip("int", [0, 7, -3])).toEqual(["0", "7", "-3"])
        expect(yield* roundTrip("boolean", [true, false])).toEqual(["true", "false"])
      })
    )

    it.effect("refuse a value that would shift the column (a comma or a backslash) instead of sending it", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        for (const bad of ["a,b", "\\N"]) {
          const exit = yield* Effect.exit(delimitedColumn(sql, "text", ["fine", bad]))
          expect(Exit.isFailure(exit) && Exit.isInterrupted(exit) === false).toBe(true)
        }
      })
    )
  })
})
