import { Command } from "@effect/cli"
import { Effect, Either, Layer, Option } from "effect"
import { AppConfig, loadAppConfig } from "./config.js"
import { DatabaseLive } from "./database/database.js"
import { runningEmbeddedUrl } from "./database/embedded-postgres.js"
import { runMigrations } from "./database/migrator.js"
import { failed } from "./operator/cli.js"

/**
 * `npm run migrate`: apply pending migrations to the configured database and exit (docs/operating/cli.md):
 * DATABASE_URL, else the embedded PostgreSQL of the service running in FACET_DATA_DIR, else that embedded
 * PostgreSQL started for the while.
 */
export const migrateCommand = Command.make("migrate", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadAppConfig
    if (Either.isLeft(config)) return yield* failed(`invalid configuration:\n${config.left}`)
    const databaseUrl = Option.orElse(config.right.databaseUrl, () => runningEmbeddedUrl(config.right.dataDir))
    const { applied, total } = yield* runMigrations().pipe(
      Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, { ...config.right, databaseUrl }))))
    )
    yield* Effect.logInfo(`database is at migration ${total} (${applied.length} applied now)`)
  })
).pipe(Command.withDescription("apply pending migrations to the configured database and exit, without serving"))
