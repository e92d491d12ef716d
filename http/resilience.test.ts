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
  // a token every 10 s: nothing refills while the test runs, however slow the machine
  layer(TestAppLive({ rateLimit: { perSecond: 0.1, burst: 3 } }), { excludeTestServices: true })((it) => {
    it.effect(
      "answers 429 with Retry-After once a bucket is empty: a key that authenticated has its own, made-up keys draw from their caller's address",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const get = (apiKey: string) =>
            Effect.map(client.request("GET", "/v1/wallet-asset-policies", { apiKey }), (r) => r.status)
          // the address's bucket: the application, then the new key's first request (not yet known here)
          const applied = yield* apply("Rate Limited Shop")
          expect(applied.status).toBe(201)
          const apiKey = String(asRecord(asRecord(applied.body).env).FACET_API_KEY)
          expect(yield* get(apiKey)).toBe(200)
          // from now on its own bucket: three, then 429
          const statuses: Array<number> = []
          for (let i = 0; i < 4; i++) statuses.push(yield* get(apiKey))
          expect(statuses).toEqual([200, 200, 200, 429])
          const limited = yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey })
          expect(limited.status).toBe(429)
          expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
          expect(asRecord(limited.body).error).toMatch(/rate limit/)
          // a made-up key opens no bucket of its own: the address's last token, then 429 for every other one
          expect(yield* get("fk_live_made-up-1")).toBe(401)
          expect(yield* get("fk_live_made-up-2")).toBe(429)
          expect(yield* get("fk_live_made-up-3")).toBe(429)
        }),
      60_000
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
