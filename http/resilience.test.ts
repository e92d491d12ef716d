import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { startEmbeddedPostgres } from "../src/database/embedded-postgres.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"

const apply = (projectName: string) =>
  Effect.flatMap(TestClient, (client) =>
    client.request("POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: projectName,
        business_type: "shop",
        use_case: "payments",
        agree_terms: true,
        contact_email: "o@x.example"
      }
    })
  )

describe("rate limiting", () => {
  layer(TestAppLive({ rateLimit: { perSecond: 1, burst: 3 } }), { excludeTestServices: true })((it) => {
    it.effect("answers 429 with Retry-After once a key's bucket is empty, per key", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const statuses: Array<number> = []
        for (let i = 0; i < 4; i++) {
          statuses.push(
            (yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey: "fk_live_key-one" })).status
          )
        }
        expect(statuses).toEqual([401, 401, 401, 429])
        const limited = yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey: "fk_live_key-one" })
        expect(limited.status).toBe(429)
        expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(asRecord(limited.body).error).toMatch(/rate limit/)
        // another key has its own bucket
        expect((yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey: "fk_live_key-two" })).status).toBe(
          401
        )
      })
    )
  })
})

describe("database outage", () => {
  it.live("answers 503 {error} while the database is down, never 500", () =>
    Effect.gen(function* () {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "facet-test-pg-outage-"))
      const pgScope = yield* Scope.make()
      const pg = yield* startEmbeddedPostgres({ dataDir }).pipe(Scope.extend(pgScope), Effect.orDie)
      const context = yield* Layer.build(TestAppLive({ databaseUrl: Option.some(pg.url) }))
      const run = <A, E>(effect: Effect.Effect<A, E, TestClient>) => Effect.provide(effect, context)

      expect((yield* run(apply("Before Outage"))).status).toBe(201)
      yield* Scope.close(pgScope, Exit.void)

      const during = yield* run(apply("During Outage"))
      expect(during.status).toBe(503)
      expect(asRecord(during.body).error).toMatch(/temporarily unavailable/)
      const health = yield* run(Effect.flatMap(TestClient, (c) => c.request("GET", "/health")))
      expect(health.status).toBe(503)
      expect(asRecord(asRecord(health.body).checks).database).toBe("unreachable")
      const authed = yield* run(
        Effect.flatMap(TestClient, (c) => c.request("GET", "/v1/wallet-asset-policies", { apiKey: "fk_live_x" }))
      )
      expect(authed.status).toBe(503)
      fs.rmSync(dataDir, { recursive: true, force: true })
    }).pipe(Effect.scoped)
  )
})
