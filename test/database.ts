import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { inject } from "vitest"
import { runMigrations } from "../src/database/migrator.js"

/** Creates a fresh, empty database in the run's PostgreSQL (test/global-setup.ts) and returns its URL. */
export const createTestDatabase = Effect.gen(function* () {
  const admin = inject("databaseUrl")
  const name = `test_${randomBytes(6).toString("hex")}`
  yield* Effect.scoped(
    Effect.flatMap(PgClient.make({ url: Redacted.make(admin), maxConnections: 1 }), (sql) =>
      sql.unsafe(`CREATE DATABASE ${name}`)
    )
  ).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
  const url = new URL(admin)
  url.pathname = `/${name}`
  return Redacted.make(url.toString())
})

/** A migrated database of its own for one test file, as the SqlClient. */
export const TestDatabaseLive = Layer.unwrapEffect(
  Effect.map(createTestDatabase, (url) => PgClient.layer({ url, maxConnections: 10 }))
).pipe(Layer.tap((context) => runMigrations().pipe(Effect.provide(context))))
