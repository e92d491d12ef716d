import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { type Context, Effect, Either, Exit, Layer, Option, type Redacted, Schema, Scope } from "effect"
import * as http from "node:http"
import { freePort } from "../database/embedded-postgres.js"
import { createTestDatabase } from "../../test/database.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { onboardMerchant } from "../../test/merchants.js"
import { asRecord } from "../../test/json.js"
import { eventually, type ReceivedRequest, startReceiver } from "../../test/webhook-receiver.js"
import type { AppConfigShape } from "../config.js"
import { Order } from "../domain/order.js"
import { type OrderBodyEvent, paymentEventKey } from "../domain/webhook-events.js"
import { guardedLookup } from "./destination-guard.js"
import { type OutboxEvent, WebhookOutbox } from "./outbox.js"
import { verifyWebhook } from "./receiver.js"
import { signBody } from "./signature.js"
import { WebhookAdmin } from "./webhook-admin.js"

type App = Context.Context<TestClient | SqlClient.SqlClient | WebhookOutbox | WebhookAdmin>

/** One running instance of the service (its own dispatcher) on a given database, until its scope closes. */
const startApp = (databaseUrl: Redacted.Redacted<string>, overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context: App = yield* Layer.buildWithScope(
      TestAppLive({ ...overrides, databaseUrl: Option.some(databaseUrl) }),
      scope
    )
    return {
      scope,
      run: <A, E>(effect: Effect.Effect<A, E, TestClient | SqlClient.SqlClient | WebhookOutbox | WebhookAdmin>) =>
        Effect.provide(effect, context)
    }
  })

/** A merchant whose webhooks go to `webhookUrl`. */
const onboard = (webhookUrl: string) => onboardMerchant({ webhook_url: webhookUrl })

const depositEvent = (merchantId: string, destination: string | null, n: number): OutboxEvent => ({
  merchantId,
  event: "wallet.deposit.confirmed",
  idempotencyKey: `wallet.deposit.confirmed:TRC20:USDT:0xhash${n}:TAddr:${n}`,
  destination,
  body: {
    event: "wallet.deposit.confirmed",
    deposit_address_id: "dep_1",
    external_user_id: "u1",
    wallet_id: "wal_1",
    chain: "TRC20",
    currency: "USDT",
    amount: "12.5",
    tx_hash: `0xhash${n}`,
    from_address: "TFrom",
    to_address: "TAddr",
    event_index: n,
    block_number: 100 + n,
    confirmations: 19,
    confirmed_at: "2026-11-22T00:00:00.000Z",
    created_at: "2026-11-22T00:00:00.000Z"
  }
})

const header = (request: ReceivedRequest | undefined, name: string) => {
  const value = request?.headers[name]
  return typeof value === "string" ? value : undefined
}

describe("webhook delivery", () => {
  it.live("delivers an order's expiry and a deposit, signed, with the contract's keys", () =>
    Effect.gen(function* () {
      const receiver = yield* startReceiver()
      const app = yield* startApp(yield* createTestDatabase)
      const { apiKey, merchantId, secret } = yield* app.run(onboard(receiver.url))
      const created = yield* app.run(
        Effect.flatMap(TestClient, (c) =>
          c.request("POST", "/v1/orders", { apiKey, json: { amount: "5", notify_url: `${receiver.url}?order` } })
        )
      )
      const orderId = String(asRecord(created.body).order_id)
      yield* app.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE orders SET expire_at = now() WHERE id = ${orderId}`)
      )
      yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(depositEvent(merchantId, receiver.url, 1))))

      yield* eventually(
        Effect.sync(() => receiver.received.length),
        (n) => n >= 2
      )
      expect(receiver.received).toHaveLength(2)
      const parsed = receiver.received.map((r) => verifyWebhook({ rawBody: r.rawBody, headers: r.headers, secret }))
      expect(parsed.every(Either.isRight)).toBe(true)
      const keys = receiver.received.map((r) => header(r, "x-facet-idempotency-key")).sort()
      expect(keys).toEqual(
        [`${orderId}:order.expired:EXPIRED`, "wallet.deposit.confirmed:TRC20:USDT:0xhash1:TAddr:1"].sort()
      )
      const order = receiver.received.find((r) => header(r, "x-facet-event") === "order.updated")
      expect(JSON.parse(order?.rawBody.toString() ?? "{}")).toMatchObject({
        event: "order.expired",
        order: { order_id: orderId, status: "EXPIRED" }
      })
      expect(header(order, "x-facet-signature")).toMatch(/^[a-f0-9]{64}$/)
      expect(header(order, "x-facet-attempt")).toBe("1")
      expect(header(order, "x-facet-delivery-id")).toMatch(/^evt_/)
      const rows = yield* eventually(
        app.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<{
                status: string
                n: string
              }>`SELECT e.status, count(a.id) AS n FROM webhook_events e JOIN webhook_attempts a ON a.event_id = e.id
            WHERE e.merchant_id = ${merchantId} GROUP BY e.id, e.status`
          )
        ),
        (r) => r.length === 2 && r.every((row) => row.status === "delivered")
      )
      expect(rows.map((r) => [r.status, r.n])).toEqual([
        ["delivered", "1"],
        ["delivered", "1"]
      ])
      yield* Scope.close(app.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.live("retries a failing receiver with the same bytes and key, recording every attempt", () =>
    Effect.gen(function* () {
      const receiver = yield* startReceiver((seen) => (seen <= 2 ? 500 : 204))
      const app = yield* startApp(yield* createTestDatabase)
      const { merchantId, secret } = yield* app.run(onboard(receiver.url))
      yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(depositEvent(merchantId, receiver.url, 2))))
      yield* eventually(
        Effect.sync(() => receiver.received.length),
        (n) => n >= 3
      )
      const [a, b, c] = receiver.received
      expect(receiver.received).toHaveLength(3)
      expect(b?.rawBody.equals(a?.rawBody ?? Buffer.alloc(0))).toBe(true)
      expect(c?.rawBody.equals(a?.rawBody ?? Buffer.alloc(0))).toBe(true)
      expect(new Set(receiver.received.map((r) => header(r, "x-facet-idempotency-key"))).size).toBe(1)
      expect(new Set(receiver.received.map((r) => header(r, "x-facet-delivery-id"))).size).toBe(1)
      expect(receiver.received.map((r) => header(r, "x-facet-attempt"))).toEqual(["1", "2", "3"])
      expect(header(c, "x-facet-signature")).toBe(signBody(secret, c?.rawBody ?? ""))
      const attempts = yield* eventually(
        app.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<{ attempt: number; status_code: number | null; error: string | null; latency_ms: number }>`
            SELECT a.attempt, a.status_code, a.error, a.latency_ms FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id
            WHERE e.merchant_id = ${merchantId} ORDER BY a.attempt`
          )
        ),
        (rows) => rows.length === 3
      )
      expect(attempts.map((r) => [r.attempt, r.status_code, r.error])).toEqual([
        [1, 500, "HTTP 500"],
        [2, 500, "HTTP 500"],
        [3, 204, null]
      ])
      yield* Scope.close(app.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.live("a receiver that is down across a restart of the service still gets everything", () =>
    Effect.gen(function* () {
      const databaseUrl = yield* createTestDatabase
      const port = yield* freePort
      const url = `http://127.0.0.1:${port}/hook`
      const first = yield* startApp(databaseUrl)
      const { merchantId } = yield* first.run(onboard(url))
      yield* first.run(
        Effect.flatMap(WebhookOutbox, (o) =>
          Effect.forEach([1, 2, 3], (n) => o.enqueue(depositEvent(merchantId, url, n)))
        )
      )
      const failed = yield* eventually(
        first.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<{
                n: string
              }>`SELECT count(*) AS n FROM webhook_events WHERE merchant_id = ${merchantId} AND last_error IS NOT NULL`
          )
        ),
        (rows) => rows[0]?.n === "3"
      )
      expect(failed[0]?.n).toBe("3")
      yield* Scope.close(first.scope, Exit.void)

      const receiver = yield* startReceiver(() => 200, port)
      const second = yield* startApp(databaseUrl)
      yield* eventually(
        Effect.sync(() => receiver.received.length),
        (n) => n >= 3
      )
      expect(receiver.received.map((r) => header(r, "x-facet-idempotency-key")).sort()).toEqual(
        [1, 2, 3].map((n) => depositEvent(merchantId, url, n).idempotencyKey).sort()
      )
      yield* Scope.close(second.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.live("two dispatchers on one database never send the same attempt twice", () =>
    Effect.gen(function* () {
      const databaseUrl = yield* createTestDatabase
      const receiver = yield* startReceiver()
      const one = yield* startApp(databaseUrl)
      const two = yield* startApp(databaseUrl)
      const merchants = yield* Effect.all([
        one.run(onboard(receiver.url)),
        one.run(onboard(receiver.url)),
        two.run(onboard(receiver.url))
      ])
      yield* one.run(
        Effect.flatMap(WebhookOutbox, (o) =>
          Effect.forEach(
            Array.from({ length: 60 }, (_, i) => i),
            (i) => o.enqueue(depositEvent(merchants[i % 3]?.merchantId ?? "", receiver.url, i))
          )
        )
      )
      yield* eventually(
        Effect.sync(() => receiver.received.length),
        (n) => n >= 60
      )
      yield* Effect.sleep("300 millis")
      const pairs = receiver.received.map((r) => `${header(r, "x-facet-delivery-id")}#${header(r, "x-facet-attempt")}`)
      expect(pairs).toHaveLength(60)
      expect(new Set(pairs).size).toBe(60)
      yield* Scope.close(one.scope, Exit.void)
      yield* Scope.close(two.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.live("a merchant whose endpoint hangs does not delay another merchant's deliveries", () =>
    Effect.gen(function* () {
      // the hanging receiver never answers within the 2 s test timeout
      const slow = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const server = http.createServer(() => undefined)
          server.listen(0, "127.0.0.1")
          return server
        }),
        (server) =>
          Effect.sync(() => {
            server.closeAllConnections()
            server.close()
          })
      )
      yield* Effect.sleep("50 millis")
      const address = slow.address()
      const slowUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/hook`
      const fast = yield* startReceiver()
      const app = yield* startApp(yield* createTestDatabase)
      const stuck = yield* app.run(onboard(slowUrl))
      const healthy = yield* app.run(onboard(fast.url))
      yield* app.run(
        Effect.flatMap(WebhookOutbox, (o) =>
          Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i),
            (i) => o.enqueue(depositEvent(stuck.merchantId, slowUrl, i))
          )
        )
      )
      yield* Effect.sleep("200 millis")
      const started = Date.now()
      yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(depositEvent(healthy.merchantId, fast.url, 99))))
      yield* eventually(
        Effect.sync(() => fast.received.length),
        (n) => n >= 1,
        5_000
      )
      expect(fast.received).toHaveLength(1)
      expect(Date.now() - started).toBeLessThan(1_500)
      yield* Scope.close(app.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.live(
    "one order's events go out in order: a later one waits while an earlier one of the same order is failing (issue 53, defect 2)",
    () =>
      Effect.gen(function* () {
        // the first delivery fails, every other succeeds
        const receiver = yield* startReceiver((seen) => (seen === 1 ? 500 : 200))
        const app = yield* startApp(yield* createTestDatabase)
        const { apiKey, merchantId } = yield* app.run(onboard(receiver.url))
        const created = yield* app.run(
          Effect.flatMap(TestClient, (c) => c.request("POST", "/v1/orders", { apiKey, json: { amount: "5" } }))
        )
        const order = Schema.decodeUnknownSync(Order)(created.body)
        const payment = {
          chain: "TRC20",
          currency: "USDT",
          tx_hash: "0xpaid",
          to_address: order.pay_address,
          event_index: 0,
          amount: "5",
          block_number: 10,
          confirmations: 0
        }
        const event = (bodyEvent: OrderBodyEvent, status: "CONFIRMING" | "PAID"): OutboxEvent => ({
          merchantId,
          event: "order.updated",
          idempotencyKey: paymentEventKey(payment, bodyEvent),
          orderId: order.order_id,
          destination: receiver.url,
          body: { event: bodyEvent, order: { ...order, status }, payment, created_at: new Date().toISOString() }
        })
        const detected = event("payment.detected", "CONFIRMING")
        const confirmed = event("payment.confirmed", "PAID")
        // written together, as one block's transaction writes them
        yield* app.run(
          Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql.withTransaction(
              Effect.flatMap(WebhookOutbox, (o) => Effect.forEach([detected, confirmed], (e) => o.enqueue(e)))
            )
          )
        )
        yield* eventually(
          Effect.sync(() => receiver.received.length),
          (n) => n >= 3
        )
        // the stale CONFIRMING never lands after PAID: the later event waited for the earlier one's retry
        expect(receiver.received.map((r) => header(r, "x-facet-idempotency-key"))).toEqual([
          detected.idempotencyKey,
          detected.idempotencyKey,
          confirmed.idempotencyKey
        ])
        // and each body says its place in the order's events: a receiver ignores an older one
        expect(receiver.received.map((r) => asRecord(JSON.parse(r.rawBody.toString())).sequence)).toEqual([1, 1, 2])
        yield* Scope.close(app.scope, Exit.void)
      }).pipe(Effect.scoped)
  )

  it.live(
    "a merchant-wide replay sends what went to the merchant's webhook_url to today's; an order's notify_url stays (issue 53, defect 3)",
    () =>
      Effect.gen(function* () {
        const lost = yield* startReceiver(() => 503)
        const today = yield* startReceiver(() => 200)
        const app = yield* startApp(yield* createTestDatabase)
        const { apiKey, merchantId } = yield* app.run(onboard(lost.url))
        const created = yield* app.run(
          Effect.flatMap(TestClient, (c) =>
            c.request("POST", "/v1/orders", { apiKey, json: { amount: "5", notify_url: `${lost.url}?order` } })
          )
        )
        const orderId = String(asRecord(created.body).order_id)
        const deposit = depositEvent(merchantId, lost.url, 7)
        yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(deposit)))
        yield* app.run(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE orders SET expire_at = now() WHERE id = ${orderId}`)
        )
        const events = app.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ idempotency_key: string; destination: string; last_error: string | null }>`
              SELECT idempotency_key, destination, last_error FROM webhook_events WHERE merchant_id = ${merchantId}
              ORDER BY idempotency_key`
          )
        )
        yield* eventually(events, (rows) => rows.length === 2 && rows.every((r) => r.last_error !== null))
        // the merchant moves its webhook_url away from the lost host, then replays everything that failed
        yield* app.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE merchants SET webhook_url = ${today.url} WHERE id = ${merchantId}`
          )
        )
        expect(yield* app.run(Effect.flatMap(WebhookAdmin, (a) => a.replay({ merchantId })))).toBe(2)
        yield* eventually(
          Effect.sync(() => today.received.length),
          (n) => n >= 1
        )
        expect((yield* events).map((r) => [r.idempotency_key, r.destination])).toEqual([
          [`${orderId}:order.expired:EXPIRED`, `${lost.url}?order`],
          [deposit.idempotencyKey, today.url]
        ])
        expect(today.received.map((r) => header(r, "x-facet-idempotency-key"))).toEqual([deposit.idempotencyKey])
        yield* Scope.close(app.scope, Exit.void)
      }).pipe(Effect.scoped)
  )

  it.live("in mainnet mode a private or loopback destination is refused and never contacted", () =>
    Effect.gen(function* () {
      const receiver = yield* startReceiver()
      const app = yield* startApp(yield* createTestDatabase, { network: "mainnet" })
      const { merchantId } = yield* app.run(onboard("https://merchant.example/hook"))
      const localhostUrl = receiver.url.replace("127.0.0.1", "localhost")
      yield* app.run(
        Effect.flatMap(WebhookOutbox, (o) =>
          Effect.forEach(
            [
              [receiver.url, 1],
              [localhostUrl, 2],
              ["http://169.254.169.254/latest/meta-data", 3]
            ] as const,
            ([url, n]) => o.enqueue(depositEvent(merchantId, url, n))
          )
        )
      )
      const rows = yield* eventually(
        app.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<{
                last_error: string | null
              }>`SELECT last_error FROM webhook_events WHERE merchant_id = ${merchantId} AND last_error IS NOT NULL`
          )
        ),
        (r) => r.length === 3
      )
      expect(rows.every((r) => /refused/.test(r.last_error ?? ""))).toBe(true)
      expect(receiver.received).toHaveLength(0)
      yield* Scope.close(app.scope, Exit.void)

      // a name that resolves to loopback is refused at connect time too
      const lookup = yield* Effect.async<string>((resume) => {
        guardedLookup("localhost", {}, (error) => resume(Effect.succeed(error === null ? "allowed" : error.message)))
      })
      expect(lookup).toMatch(/forbidden address/)
    }).pipe(Effect.scoped)
  )

  it.live("keeps events without a destination, and operators can list and replay dead ones", () =>
    Effect.gen(function* () {
      let healthy = false
      const receiver = yield* startReceiver(() => (healthy ? 200 : 503))
      const app = yield* startApp(yield* createTestDatabase)
      const { merchantId } = yield* app.run(onboard(receiver.url))
      yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(depositEvent(merchantId, null, 9))))
      const sql = (query: (s: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<{ status: string }>, unknown>) =>
        app.run(Effect.flatMap(SqlClient.SqlClient, (s) => Effect.orDie(query(s))))
      expect(
        (yield* sql(
          (s) => s<{ status: string }>`SELECT status FROM webhook_events WHERE merchant_id = ${merchantId}`
        ))[0]?.status
      ).toBe("no_destination")

      // an event past its 24 h that fails once more is dead
      yield* app.run(Effect.flatMap(WebhookOutbox, (o) => o.enqueue(depositEvent(merchantId, receiver.url, 10))))
      yield* sql(
        (s) =>
          s<{
            status: string
          }>`UPDATE webhook_events SET created_at = now() - interval '25 hours' WHERE destination IS NOT NULL AND merchant_id = ${merchantId} RETURNING status`
      )
      yield* eventually(
        sql(
          (s) =>
            s<{
              status: string
            }>`SELECT status FROM webhook_events WHERE status = 'dead' AND merchant_id = ${merchantId}`
        ),
        (r) => r.length === 1
      )
      const dead = yield* app.run(Effect.flatMap(WebhookAdmin, (a) => a.problems("dead", merchantId)))
      expect(dead).toHaveLength(1)
      expect(dead[0]?.last_error).toBe("HTTP 503")

      healthy = true
      const replayed = yield* app.run(Effect.flatMap(WebhookAdmin, (a) => a.replay({ merchantId })))
      expect(replayed).toBe(1)
      yield* eventually(
        sql(
          (s) =>
            s<{
              status: string
            }>`SELECT status FROM webhook_events WHERE status = 'delivered' AND merchant_id = ${merchantId}`
        ),
        (r) => r.length === 1
      )
      // the event that had no destination goes to the merchant's webhook_url once replayed by id
      const [orphan] = yield* app.run(Effect.flatMap(WebhookAdmin, (a) => a.problems("problems", merchantId)))
      expect(orphan).toBeUndefined()
      const [noDest] = yield* app.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (s) =>
            s<{
              id: string
            }>`SELECT id FROM webhook_events WHERE status = 'no_destination' AND merchant_id = ${merchantId}`
        )
      )
      yield* app.run(Effect.flatMap(WebhookAdmin, (a) => a.replay({ eventId: noDest?.id ?? "" })))
      yield* eventually(
        sql(
          (s) =>
            s<{
              status: string
            }>`SELECT status FROM webhook_events WHERE status = 'delivered' AND merchant_id = ${merchantId}`
        ),
        (r) => r.length === 2
      )
      expect(
        receiver.received.filter((r) => r.headers["x-facet-idempotency-key"]?.toString().includes("0xhash9"))
      ).toHaveLength(1)
      yield* Scope.close(app.scope, Exit.void)
    }).pipe(Effect.scoped)
  )

  it.effect("the receiver helper accepts only the exact signed bytes", () =>
    Effect.sync(() => {
      const body = JSON.stringify(depositEvent("mch_1", null, 1).body)
      const headers = {
        "X-FACET-EVENT": "wallet.deposit.confirmed",
        "X-FACET-IDEMPOTENCY-KEY": "k",
        "X-FACET-SIGNATURE": signBody("whsec_s", body)
      }
      const ok = verifyWebhook({ rawBody: body, headers, secret: "whsec_s" })
      expect(Either.isRight(ok) && ok.right.type === "wallet.deposit.confirmed" && ok.right.body.amount).toBe("12.5")
      expect(verifyWebhook({ rawBody: body.replace("12.5", "99.5"), headers, secret: "whsec_s" })).toEqual(
        Either.left("invalid signature")
      )
      expect(verifyWebhook({ rawBody: body, headers, secret: "whsec_other" })).toEqual(Either.left("invalid signature"))
      expect(
        verifyWebhook({ rawBody: body, headers: { ...headers, "X-FACET-SIGNATURE": "abc" }, secret: "whsec_s" })
      ).toEqual(Either.left("invalid signature"))
    })
  )
})
