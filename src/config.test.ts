import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { loadAppConfig } from "./config.js"

const load = (env: Record<string, string>) =>
  loadAppConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

describe("configuration", () => {
  it.effect("has working defaults for a fresh machine", () =>
    Effect.gen(function* () {
      const config = yield* Effect.flatMap(load({}), Either.match({ onLeft: Effect.die, onRight: Effect.succeed }))
      expect(config.port).toBe(8080)
      expect(config.baseUrl).toBe("http://localhost:8080")
      expect(config.dataDir.endsWith(".facet")).toBe(true)
      expect(Option.isNone(config.databaseUrl)).toBe(true)
      expect(config.network).toBe("devnet")
      expect(config.indexer.writers).toBe(2)
    })
  )

  it.effect("derives the public URL from PORT and takes DATABASE_URL", () =>
    Effect.gen(function* () {
      const config = yield* Effect.flatMap(
        load({
          PORT: "9000",
          DATABASE_URL: "postgres://u:p@db:5432/facet",
          FACET_BASE_URL: "https://pay.example.com/"
        }),
        Either.match({ onLeft: Effect.die, onRight: Effect.succeed })
      )
      expect(config.port).toBe(9000)
      expect(config.baseUrl).toBe("https://pay.example.com")
      expect(Option.map(config.databaseUrl, Redacted.value)).toEqual(Option.some("postgres://u:p@db:5432/facet"))
    })
  )

  it.effect("names every bad variable in a clear message", () =>
    Effect.gen(function* () {
      const result = yield* load({
        PORT: "http",
        FACET_BASE_URL: "pay.example.com",
        DATABASE_URL: "mysql://x",
        FACET_NETWORK: "testnet"
      })
      expect(Either.isLeft(result)).toBe(true)
      const message = Either.isLeft(result) ? result.left : ""
      expect(message).toMatch(/PORT/)
      const port = yield* load({ PORT: "70000" })
      expect(Either.isLeft(port) ? port.left : "").toMatch(/PORT must be a TCP port/)
      const url = yield* load({ FACET_BASE_URL: "pay.example.com" })
      expect(Either.isLeft(url) ? url.left : "").toMatch(/FACET_BASE_URL must be an absolute http\(s\) URL/)
      const db = yield* load({ DATABASE_URL: "mysql://x" })
      expect(Either.isLeft(db) ? db.left : "").toMatch(/DATABASE_URL must be a postgres/)
      const network = yield* load({ FACET_NETWORK: "testnet" })
      expect(Either.isLeft(network) ? network.left : "").toMatch(/FACET_NETWORK/)
      const writers = yield* load({ FACET_INDEXER_WRITERS: "0" })
      expect(Either.isLeft(writers) ? writers.left : "").toMatch(
        /FACET_INDEXER_WRITERS must be a whole number of batches from 1 to 4/
      )
    })
  )
})
