import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { TestDatabaseLive } from "../../test/database.js"
import { tempDir } from "../../test/temp-dir.js"
import { loadMigrations, runMigrations } from "./migrator.js"

const migrationsDir = (files: Record<string, string>) =>
  Effect.tap(tempDir("facet-migrations-"), (dir) =>
    Effect.sync(() => {
      for (const [name, sql] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), sql)
    })
  )

describe("migrations", () => {
  layer(TestDatabaseLive, { excludeTestServices: true })((it) => {
    it.effect("the project's migrations are applied and recorded once", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const again = yield* runMigrations()
          expect(again.applied).toEqual([])
          const recorded = yield* sql<{ id: number }>`SELECT id FROM schema_migrations ORDER BY id`
          expect(recorded.map((r) => r.id)).toEqual((yield* loadMigrations()).map((m) => m.id))
          const policies = yield* sql<{ n: string }>`SELECT count(*) AS n FROM wallet_asset_policies`
          expect(policies[0]?.n).toBe("8")
        })
      )
    )

    it.effect("applies new files in order, each once, even when two runs race", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE IF EXISTS schema_migrations`
          const dir = yield* migrationsDir({
            "0001_first.sql": "CREATE TABLE m_first (id int); INSERT INTO m_first VALUES (1);",
            "0002_second.sql": "INSERT INTO m_first VALUES (2);"
          })
          const [a, b] = yield* Effect.all([runMigrations(dir), runMigrations(dir)], { concurrency: 2 })
          expect([...a.applied, ...b.applied].sort()).toEqual([1, 2])
          const rows = yield* sql<{ id: number }>`SELECT id FROM m_first ORDER BY id`
          expect(rows.map((r) => r.id)).toEqual([1, 2])
        })
      )
    )

    // two processes starting on a fresh database (the service and `npm run indexer`) both created the
    // bookkeeping table outside the lock: "duplicate key value violates unique constraint
    // pg_type_typname_nsp_index" stopped one of them (seen in CI)
    it.effect("many runs racing on a database that has never been migrated: every one succeeds", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const dir = yield* migrationsDir({ "0001_only.sql": "CREATE TABLE m_only (id int);" })
          for (let round = 0; round < 5; round++) {
            yield* sql`DROP TABLE IF EXISTS schema_migrations`
            yield* sql`DROP TABLE IF EXISTS m_only`
            const runs = yield* Effect.all(
              Array.from({ length: 8 }, () => Effect.either(runMigrations(dir))),
              { concurrency: "unbounded" }
            )
            expect(runs.filter((r) => r._tag === "Left").map((r) => String(r))).toEqual([])
          }
        })
      )
    )

    it.effect("rolls a failing migration back whole and records nothing", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE IF EXISTS schema_migrations`
          const dir = yield* migrationsDir({
            "0001_half.sql": "CREATE TABLE m_half (id int); SELECT no_such_function();"
          })
          const result = yield* Effect.either(runMigrations(dir))
          expect(result._tag).toBe("Left")
          const table = yield* sql<{ t: string | null }>`SELECT to_regclass('m_half')::text AS t`
          expect(table[0]?.t).toBeNull()
          const recorded = yield* sql<{ n: string }>`SELECT count(*) AS n FROM schema_migrations`
          expect(recorded[0]?.n).toBe("0")
        })
      )
    )

    it.effect("refuses an applied migration whose file changed, and badly named files", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`DROP TABLE IF EXISTS schema_migrations`
          const dir = yield* migrationsDir({ "0001_edit.sql": "CREATE TABLE m_edit (id int);" })
          yield* runMigrations(dir)
          fs.writeFileSync(path.join(dir, "0001_edit.sql"), "CREATE TABLE m_edit (id bigint);")
          const changed = yield* Effect.flip(runMigrations(dir))
          expect(changed.message).toMatch(/was changed after it was applied/)
          const gap = yield* Effect.flip(
            Effect.flatMap(migrationsDir({ "0001_a.sql": "", "0003_c.sql": "" }), loadMigrations)
          )
          expect(gap.message).toMatch(/breaks the sequence/)
          const name = yield* Effect.flip(Effect.flatMap(migrationsDir({ "1_a.sql": "" }), loadMigrations))
          expect(name.message).toMatch(/NNNN_name.sql/)
        })
      )
    )
  })
})
