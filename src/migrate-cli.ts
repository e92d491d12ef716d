import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Layer } from "effect"
import { AppConfig, loadAppConfig } from "./config.js"
import { DatabaseLive } from "./database/database.js"
import { runMigrations } from "./database/migrator.js"

/** `npm run migrate`: apply pending migrations to the configured database and exit. */
const main = Effect.gen(function* () {
  const config = yield* loadAppConfig
  if (Either.isLeft(config)) {
    yield* Effect.logError(`invalid configuration:\n${config.left}`)
    return yield* Effect.sync(() => process.exit(1))
  }
  const { applied, total } = yield* runMigrations().pipe(
    Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, config.right))))
  )
  yield* Effect.logInfo(`database is at migration ${total} (${applied.length} applied now)`)
})

NodeRuntime.runMain(main)
