import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Layer } from "effect"
import { HttpLive } from "../http/server.js"
import { CoreLive } from "./app.js"
import { AppConfig, loadAppConfig } from "./config.js"
import { stopDeadline } from "./processes/stop-deadline.js"

/** `npm start`: configuration, database (embedded unless DATABASE_URL), migrations, HTTP on PORT. */
const main = Effect.gen(function* () {
  yield* stopDeadline.pipe(
    Effect.catchAll((error) =>
      Effect.zipRight(
        Effect.logError(`invalid configuration:\n${error}`),
        Effect.sync(() => process.exit(1))
      )
    )
  )
  const config = yield* loadAppConfig
  if (Either.isLeft(config)) {
    yield* Effect.logError(`invalid configuration:\n${config.left}`)
    return yield* Effect.sync(() => process.exit(1))
  }
  const AppLive = HttpLive.pipe(Layer.provide(CoreLive), Layer.provide(Layer.succeed(AppConfig, config.right)))
  yield* Effect.logInfo(
    `starting on port ${config.right.port} (network ${config.right.network}, public URL ${config.right.baseUrl})`
  )
  return yield* Layer.launch(AppLive).pipe(
    // devnets that cannot be resumed: one line that says what to do, not a stack trace
    Effect.catchTag("DevnetStateError", (error) =>
      Effect.zipRight(
        Effect.logError(`cannot start: ${error.message}`),
        Effect.sync(() => process.exit(1))
      )
    )
  )
})

NodeRuntime.runMain(main)
