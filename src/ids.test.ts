import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestDatabaseLive } from "../test/database.js"
import { ID_ALPHABET, ID_LENGTH, newIds } from "./ids.js"

const shape = (prefix: string) => new RegExp(`^${prefix}_[${ID_ALPHABET}]{${ID_LENGTH}}$`)

describe("identifiers", () => {
  layer(TestDatabaseLive, { excludeTestServices: true })((it) => {
    it.effect(
      "start with their creation time, so later ones sort later; the SQL twin makes the same shape and order",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const batch = newIds("txn", 1000)
          expect(new Set(batch).size).toBe(1000)
          for (const id of batch) expect(id).toMatch(shape("txn"))
          yield* Effect.sleep("5 millis")
          const [fromSql] = yield* sql<{ id: string }>`SELECT facet_id('txn') AS id`
          yield* Effect.sleep("5 millis")
          const [after] = newIds("txn", 1)
          const sqlId = fromSql?.id ?? ""
          expect(sqlId).toMatch(shape("txn"))
          // JS before SQL before JS: one clock, one order (the time part is the first ten characters)
          const sorted = [after ?? "", sqlId, batch[0] ?? ""].sort()
          expect(sorted).toEqual([batch[0], sqlId, after])
          // the random part differs from id to id within one millisecond
          expect(new Set(batch.map((id) => id.slice(14))).size).toBe(1000)
        })
    )
  })
})
