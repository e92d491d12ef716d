import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config.js"
import { startEmbeddedPostgres } from "./embedded-postgres.js"

/** host:port/database of a connection URL (no user, no password). */
const serverOf = (url: Redacted.Redacted<string>) => {
  try {
    const parsed = new URL(Redacted.value(url))
    return `${parsed.host}${parsed.pathname}`
  } catch {
    return "the configured URL"
  }
}

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
    // where, never the password: DATABASE_URL's server, or the running service's embedded one for a command
    if (Option.isSome(config.databaseUrl))
      yield* Effect.logInfo(`using PostgreSQL at ${serverOf(config.databaseUrl.value)}`)
    return PgClient.layer({ url, applicationName: "facet", maxConnections: 20, connectTimeout: "10 seconds" })
  })
)
