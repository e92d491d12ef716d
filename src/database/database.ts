import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { startEmbeddedPostgres } from "./embedded-postgres.js"

/**
 * The PostgreSQL connection: `DATABASE_URL` when set, otherwise an embedded server started in
 * `FACET_DATA_DIR` and stopped when the layer is released.
 */
export const DatabaseLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const url = Option.isSome(config.databaseUrl)
      ? config.databaseUrl.value
      : (yield* startEmbeddedPostgres({ dataDir: config.dataDir, avoidPorts: [config.port] })).url
    if (Option.isSome(config.databaseUrl)) yield* Effect.logInfo("using the PostgreSQL server from DATABASE_URL")
    return PgClient.layer({ url, applicationName: "facet", maxConnections: 20, connectTimeout: "10 seconds" })
  })
)
