import { Effect, Either, Layer, Option, Schema } from "effect"
import { AppConfig, type AppConfigShape, loadAppConfig } from "../config.js"
import { DatabaseLive } from "../database/database.js"
import { runningEmbeddedUrl } from "../database/embedded-postgres.js"
import { runMigrations } from "../database/migrator.js"
import { StoresLive } from "../stores/stores-layer.js"

/**
 * What every operator command starts from: the configuration and the service's database (DATABASE_URL, or
 * the embedded PostgreSQL of the service running in FACET_DATA_DIR). Commands that need the chains too add
 * them (`indexer/operator-runtime.ts`); those that do not (`npm run merchants`, `npm run custody`) load
 * nothing of the chain clients and start in half the time.
 */
export class OperatorError extends Schema.TaggedError<OperatorError>()("OperatorError", { message: Schema.String }) {}

/** The configuration with the database the service uses, limited to `chains`. */
export const operatorConfig = (chains: AppConfigShape["indexer"]["chains"]) =>
  Effect.gen(function* () {
    const loaded = yield* loadAppConfig
    if (Either.isLeft(loaded)) return yield* new OperatorError({ message: `invalid configuration:\n${loaded.left}` })
    const databaseUrl = Option.orElse(loaded.right.databaseUrl, () => runningEmbeddedUrl(loaded.right.dataDir))
    if (Option.isNone(databaseUrl)) {
      return yield* new OperatorError({
        message: `no database: set DATABASE_URL, or start the service so its embedded PostgreSQL runs in ${loaded.right.dataDir}`
      })
    }
    return { ...loaded.right, databaseUrl, indexer: { ...loaded.right.indexer, chains } } satisfies AppConfigShape
  })

/** Only the service's database (migrated), for commands that read and mark state (`npm run custody`). */
export const operatorDatabaseLive = (config: AppConfigShape) =>
  Layer.merge(Layer.effectDiscard(runMigrations()), StoresLive).pipe(
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(Layer.succeed(AppConfig, config))
  )
