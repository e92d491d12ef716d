import { Reactivity } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { startEmbeddedPostgres } from "../../src/database/embedded-postgres.js"
import { TestAppLive, TestClient } from "../http-harness.js"
import { asRecord } from "../json.js"
import { checkInvariants, type Violation } from "./invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

interface Attempt {
  readonly key: string
  readonly kind: "order" | "deposit_address"
  readonly status: number
  readonly id: string
}

/**
 * Database faults under load: API clients create orders and deposit addresses (each with its
 * idempotency key) while the service's connections are terminated mid-transaction
 * (`pg_terminate_backend`) and the server is restarted. Requests must get 201 or 503 `{error}`, never a
 * 500; the service must recover by itself; retrying every request that did not succeed, with the same
 * key, must give exactly one row per key; nothing half-written.
 */
export const databaseFaultsScenario = (options: { readonly seconds: number; readonly seed: number }) =>
  Effect.gen(function* () {
    const random = seededRandom(options.seed).fork("database")
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "facet-faults-pg-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
    let pgScope = yield* Scope.make()
    const pg = yield* startEmbeddedPostgres({ dataDir }).pipe(Scope.extend(pgScope), Effect.orDie)
    yield* Effect.addFinalizer(() => Scope.close(pgScope, Exit.void))
    const context = yield* Layer.build(TestAppLive({ databaseUrl: Option.some(pg.url) }))
    const run = <A, E>(effect: Effect.Effect<A, E, TestClient | SqlClient.SqlClient>) => Effect.provide(effect, context)
    const client = Effect.provide(TestClient, context)
    const api = yield* client

    const onboarded = asRecord(
      asRecord(
        (yield* api.request("POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Database faults ${options.seed}`,
            business_type: "shop",
            use_case: "payments",
            agree_terms: true,
            contact_email: "ops@faults.example"
          }
        })).body
      ).env
    )
    const apiKey = String(onboarded.FACET_API_KEY)

    const create = (kind: Attempt["kind"], key: string) =>
      kind === "order"
        ? api.request("POST", "/v1/orders", {
            apiKey,
            headers: { "x-service-idempotency-key": key },
            json: { amount: "10", chain: "TRC20", currency: "USDT", out_trade_no: key }
          })
        : api.request("POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: key, chain: "BEP20", currency: "USDT" }
          })

    const attempts: Array<Attempt> = []
    const violations: Array<Violation> = []
    let sequence = 0
    const worker = Effect.gen(function* () {
      const kind: Attempt["kind"] = random.next() < 0.5 ? "order" : "deposit_address"
      sequence += 1
      const key = `db-fault-${options.seed}-${sequence}`
      const response = yield* create(kind, key)
      const body = asRecord(response.body)
      if (response.status >= 500 && response.status !== 503)
        violations.push({
          invariant: "503 while the database is down, never 500",
          detail: `${response.status} ${response.text.slice(0, 200)}`
        })
      if (response.status >= 400 && typeof body.error !== "string")
        violations.push({
          invariant: "every error is {error}",
          detail: `${response.status} ${response.text.slice(0, 200)}`
        })
      attempts.push({ key, kind, status: response.status, id: String(body.order_id ?? body.address ?? "") })
    })
    const deadline = Date.now() + options.seconds * 1000
    const load = Effect.forEach(
      [1, 2, 3, 4],
      () => Effect.whileLoop({ while: () => Date.now() < deadline, body: () => worker, step: () => undefined }),
      { concurrency: 4 }
    )

    // the faults: terminated connections every ~0.5 s, and one restart of the server halfway
    let terminated = 0
    let restarts = 0
    const admin = (statement: string) =>
      Effect.scoped(
        Effect.flatMap(PgClient.make({ url: pg.url, maxConnections: 1 }), (sql) => sql.unsafe<{ n: number }>(statement))
      ).pipe(
        Effect.provide(Reactivity.layer),
        Effect.orElseSucceed((): ReadonlyArray<{ n: number }> => [])
      )
    const faults = Effect.gen(function* () {
      const restartAt = Date.now() + (options.seconds * 1000) / 2
      while (Date.now() < deadline) {
        yield* Effect.sleep(`${200 + random.int(600)} millis`)
        if (restarts === 0 && Date.now() > restartAt) {
          yield* Scope.close(pgScope, Exit.void)
          restarts += 1
          yield* Effect.sleep(`${500 + random.int(1500)} millis`)
          pgScope = yield* Scope.make()
          yield* startEmbeddedPostgres({ dataDir, port: pg.port }).pipe(Scope.extend(pgScope), Effect.orDie)
          continue
        }
        const [row] = yield* admin(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
        terminated += row?.n ?? 0
      }
    })
    yield* Effect.all([load, faults], { concurrency: 2 })

    // it recovers by itself: /health answers 200 again without a restart of the service
    const recoveredBy = Date.now() + 30_000
    let healthy = false
    while (!healthy && Date.now() < recoveredBy) {
      healthy = (yield* api.request("GET", "/health")).status === 200
      if (!healthy) yield* Effect.sleep("500 millis")
    }
    if (!healthy)
      violations.push({
        invariant: "recovers without a restart",
        detail: "/health not 200 within 30 s of the last fault"
      })

    // a client retries what did not succeed, with the same key: exactly one row per key
    for (const attempt of attempts.filter((a) => a.status !== 201)) {
      const again = yield* create(attempt.kind, attempt.key)
      if (again.status !== 201 && again.status !== 200)
        violations.push({
          invariant: "a retry with the same key succeeds once recovered",
          detail: `${attempt.key}: ${again.status} ${again.text.slice(0, 200)}`
        })
    }
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const orderKeys = attempts.filter((a) => a.kind === "order").map((a) => a.key)
    const addressKeys = attempts.filter((a) => a.kind === "deposit_address").map((a) => a.key)
    const orderRows = yield* sql<{ out_trade_no: string; n: number }>`
      SELECT out_trade_no, count(*)::int AS n FROM orders WHERE out_trade_no IN ${sql.in(orderKeys.length === 0 ? [""] : orderKeys)} GROUP BY out_trade_no`
    const addressRows = yield* sql<{ external_user_id: string; n: number }>`
      SELECT external_user_id, count(*)::int AS n FROM deposit_addresses WHERE external_user_id IN ${sql.in(addressKeys.length === 0 ? [""] : addressKeys)} GROUP BY external_user_id`
    const counted = new Map([
      ...orderRows.map((r) => [r.out_trade_no, r.n] as const),
      ...addressRows.map((r) => [r.external_user_id, r.n] as const)
    ])
    for (const attempt of attempts) {
      const n = counted.get(attempt.key) ?? 0
      if (n !== 1)
        violations.push({
          invariant: "exactly one row per idempotency key",
          detail: `${attempt.kind} ${attempt.key}: ${n} rows`
        })
    }
    // nothing half-written: an order has its payable assets, a deposit address its wallet
    const [partial] = yield* sql<{ orders: number; addresses: number }>`
      SELECT (SELECT count(*)::int FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_assets a WHERE a.order_id = o.id)) AS orders,
             (SELECT count(*)::int FROM deposit_addresses d WHERE NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = d.wallet_id)) AS addresses`
    if ((partial?.orders ?? 0) + (partial?.addresses ?? 0) > 0)
      violations.push({
        invariant: "nothing half-written",
        detail: `${partial?.orders} orders without assets, ${partial?.addresses} deposit addresses without a wallet`
      })
    violations.push(...(yield* run(checkInvariants({ expected: [], chains: [] }))))

    const count = (f: (a: Attempt) => boolean) => attempts.filter(f).length
    const result: ScenarioResult = {
      scenario: "database faults",
      faults: terminated + restarts,
      faultDetail: `${terminated} connections terminated, ${restarts} server restart; ${attempts.length} requests: ${count((a) => a.status === 201)} created, ${count((a) => a.status === 503)} answered 503`,
      restarts: 0,
      requestsFuzzed: 0,
      payments: 0,
      violations
    }
    return result
  }).pipe(Effect.scoped)
