import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { defaultMigrationsDir, runMigrations } from "../src/database/migrator.js"
import { createTestDatabase } from "./database.js"
import { tempDir } from "./temp-dir.js"

/** The migrations up to and including `last`, copied into a directory of their own: a database of an older shape. */
export const migrationsUpTo = (last: number) =>
  Effect.tap(tempDir("facet-migrations-"), (dir) =>
    Effect.sync(() => {
      for (const file of fs
        .readdirSync(defaultMigrationsDir)
        .filter((f) => f.endsWith(".sql") && Number(f.slice(0, 4)) <= last)) {
        fs.copyFileSync(path.join(defaultMigrationsDir, file), path.join(dir, file))
      }
    })
  )

/**
 * A fresh test database in the shape migration `last` left it, as the context (its SQL client) a migration
 * test writes the old rows in and then runs the rest of the migrations against.
 */
export const databaseAtMigration = (last: number) =>
  Effect.gen(function* () {
    const url = yield* createTestDatabase
    const db = yield* Layer.build(PgClient.layer({ url, maxConnections: 2 }))
    yield* runMigrations(yield* migrationsUpTo(last)).pipe(Effect.provide(db))
    return db
  })
