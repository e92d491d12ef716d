import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export class MigrationError extends Schema.TaggedError<MigrationError>()("MigrationError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

export interface Migration {
  readonly id: number
  readonly name: string
  readonly sql: string
  readonly checksum: string
}

/** The project's `migrations/` folder, wherever the process was started from. */
export const defaultMigrationsDir = fileURLToPath(new URL("../../migrations", import.meta.url))

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/

/** Reads `NNNN_name.sql` files in id order; a gap or a duplicate id is an error, not a guess. */
export const loadMigrations = (dir: string = defaultMigrationsDir) =>
  Effect.try({
    try: () =>
      fs
        .readdirSync(dir)
        .filter((file) => file.endsWith(".sql"))
        .sort(),
    catch: (cause) => new MigrationError({ message: `cannot read migrations from ${dir}`, cause })
  }).pipe(
    Effect.flatMap((files) =>
      Effect.forEach(files, (file, index) => {
        const match = FILE_NAME.exec(file)
        if (match === null) {
          return Effect.fail(new MigrationError({ message: `migration file name ${file} is not NNNN_name.sql` }))
        }
        const id = Number(match[1])
        if (id !== index + 1) {
          return Effect.fail(
            new MigrationError({ message: `migration ${file} breaks the sequence: expected id ${index + 1}` })
          )
        }
        const sql = fs.readFileSync(path.join(dir, file), "utf8")
        return Effect.succeed<Migration>({
          id,
          name: match[2] ?? file,
          sql,
          checksum: createHash("sha256").update(sql).digest("hex")
        })
      })
    )
  )

// Any constant works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK = 7_202_608_020

/**
 * Applies every migration not yet recorded, each in its own transaction under an advisory lock, so two
 * processes starting together apply each migration exactly once. An applied migration whose file has
 * changed stops the start: the database no longer matches the code.
 */
export const runMigrations = Effect.fn("runMigrations")(function* (dir: string = defaultMigrationsDir) {
  const sql = yield* SqlClient.SqlClient
  const migrations = yield* loadMigrations(dir)
  // under the lock too: CREATE TABLE IF NOT EXISTS is not safe against itself (two sessions creating
  // the table at once: one fails on pg_type's unique index)
  yield* sql.withTransaction(
    Effect.zipRight(
      sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`,
      sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`
    )
  )
  const applied: Array<number> = []
  for (const migration of migrations) {
    const ran = yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
        const rows = yield* sql<{ checksum: string }>`SELECT checksum FROM schema_migrations WHERE id = ${migration.id}`
        const existing = rows[0]
        if (existing !== undefined) {
          if (existing.checksum !== migration.checksum) {
            return yield* new MigrationError({
              message: `migration ${migration.id}_${migration.name} was changed after it was applied; add a new migration instead`
            })
          }
          return false
        }
        yield* sql.unsafe(migration.sql)
        yield* sql`INSERT INTO schema_migrations ${sql.insert({ id: migration.id, name: migration.name, checksum: migration.checksum })}`
        return true
      })
    )
    if (ran) applied.push(migration.id)
  }
  if (applied.length > 0) yield* Effect.logInfo(`applied migrations ${applied.join(", ")}`)
  return { applied, total: migrations.length }
})

export type RunMigrationsError = MigrationError | SqlError.SqlError
