import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import pg from "pg"
import { freePort } from "../src/database/embedded-postgres.js"
import { WebhookAdmin } from "../src/webhooks/webhook-admin.js"
import { createTestDatabase } from "../test/database.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { onboardMerchant } from "../test/merchants.js"
import { asRecord } from "../test/json.js"
import { until } from "../test/service-process.js"
import { webhookProblem } from "../test/webhook-bodies.js"
import { startExpressReceiver } from "./examples/express.js"
import { startFastifyReceiver } from "./examples/fastify.js"
import { startNodeHttpReceiver } from "./examples/node-http.js"
import type { ReceiverOptions, RunningReceiver, WebhookAction } from "./examples/receive-once.js"
import { createFacetClient } from "./src/promise.js"
import { signFacetWebhook } from "./src/webhooks.js"

/**
 * The receiver conformance test: each example receiver (Node's http, Express, Fastify) as a merchant's
 * webhook_url, against the service's own deliveries — its retry after a failed action, an operator's
 * redelivery, a body made stale and signed by the service — and against forged and altered requests.
 */
const EXAMPLES: ReadonlyArray<readonly [string, (options: ReceiverOptions) => Promise<RunningReceiver>]> = [
  ["node:http", startNodeHttpReceiver],
  ["express 5", startExpressReceiver],
  ["fastify 5", startFastifyReceiver]
]

interface Attempt {
  readonly attempt: number
  readonly status_code: number | null
}

/** A merchant whose webhooks go to `webhookUrl`. */
const onboard = (webhookUrl: string) => onboardMerchant({ webhook_url: webhookUrl })

/** The merchant's own database: the examples' key table, and what its action did. */
const merchantDatabase = Effect.acquireRelease(
  Effect.gen(function* () {
    const url = Redacted.value(yield* createTestDatabase)
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    yield* Effect.promise(() =>
      pool.query("CREATE TABLE fulfilled (idempotency_key text PRIMARY KEY, event_type text)")
    )
    return { url, pool }
  }),
  ({ pool }) => Effect.promise(() => pool.end())
)

const conformance = (start: (options: ReceiverOptions) => Promise<RunningReceiver>) =>
  Effect.gen(function* () {
    const service = yield* TestClient
    const sql = yield* SqlClient.SqlClient
    const merchantDb = yield* merchantDatabase
    const rows = (query: string) => Effect.promise(() => merchantDb.pool.query(query).then((r) => r.rows))
    const port = yield* freePort
    const { apiKey, merchantId, secret } = yield* onboard(`http://127.0.0.1:${port}/facet/webhooks`)

    // the merchant's action: fulfil (a row in its own transaction), failing the first time
    const calls: Array<string> = []
    const action: WebhookAction = async (event, db) => {
      calls.push(event.idempotencyKey)
      await db.query("INSERT INTO fulfilled (idempotency_key, event_type) VALUES ($1, $2)", [
        event.idempotencyKey,
        event.type
      ])
      if (calls.length === 1) throw new Error("the fulfilment service is down")
    }
    yield* Effect.acquireRelease(
      Effect.promise(() => start({ port, secret, databaseUrl: merchantDb.url, action })),
      (receiver) => Effect.promise(() => receiver.close())
    )

    // an event the service sends: an order expires (order.updated, body event order.expired)
    const facet = createFacetClient({ baseUrl: service.url, apiKey })
    const order = yield* Effect.promise(() => facet.orders.create({ payload: { amount: "3", out_trade_no: "R-1" } }))
    yield* sql`UPDATE orders SET expire_at = now() - interval '1 second' WHERE id = ${order.order_id}`
    const key = `${order.order_id}:order.expired:EXPIRED`
    const [event] = yield* until(
      "the expiry's delivery",
      sql<{ id: string; status: string; body: string }>`
        SELECT id, status, body FROM webhook_events WHERE merchant_id = ${merchantId} AND idempotency_key = ${key}`.pipe(
        Effect.orDie
      ),
      (found) => found[0]?.status === "delivered",
      15_000
    )
    const eventId = event?.id ?? ""
    const attempts = sql<Attempt>`
      SELECT attempt, status_code FROM webhook_attempts WHERE event_id = ${eventId} ORDER BY attempt`.pipe(Effect.orDie)
    // the action failed: 500, rolled back with its key; the service's retry: processed, 200
    expect(yield* attempts).toEqual([
      { attempt: 1, status_code: 500 },
      { attempt: 2, status_code: 200 }
    ])
    expect(calls).toEqual([key, key])
    expect(yield* rows("SELECT idempotency_key, event_type FROM fulfilled")).toEqual([
      { idempotency_key: key, event_type: "order.updated" }
    ])
    expect(yield* rows("SELECT idempotency_key FROM facet_webhook_events")).toEqual([{ idempotency_key: key }])

    // an operator's redelivery (npm run webhooks -- replay): a duplicate, 200, nothing done again
    yield* Effect.flatMap(WebhookAdmin, (admin) => admin.replay({ eventId })).pipe(Effect.provide(WebhookAdmin.Default))
    yield* until("the redelivery", attempts, (found) => found.length === 3)
    expect((yield* attempts)[2]).toEqual({ attempt: 3, status_code: 200 })
    expect(calls).toHaveLength(2)
    expect(yield* rows("SELECT count(*)::int AS n FROM fulfilled")).toEqual([{ n: 1 }])

    // the body as the service wrote it is exactly its declaration (no field more or less), and its key
    expect(webhookProblem("order.updated", key, event?.body ?? "")).toBeUndefined()

    // forged (the right body for another order, signed with another secret) and altered (a signed body
    // changed): 401, nothing stored, no action
    const delivered = event?.body ?? ""
    const other = delivered.replaceAll(order.order_id, "ord_forged")
    const send = (body: string, signature: string, idempotencyKey: string) =>
      Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/facet/webhooks`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-facet-event": "order.updated",
            "x-facet-idempotency-key": idempotencyKey,
            "x-facet-signature": signature
          },
          body
        }).then((r) => r.status)
      )
    const forgedKey = "ord_forged:order.expired:EXPIRED"
    expect(yield* send(other, signFacetWebhook(other, "whsec_not_the_merchants"), forgedKey)).toBe(401)
    expect(yield* send(other, signFacetWebhook(delivered, secret), forgedKey)).toBe(401)
    expect(yield* send(delivered, signFacetWebhook(delivered, secret), forgedKey)).toBe(400)
    expect(calls).toHaveLength(2)
    expect(yield* rows("SELECT idempotency_key FROM facet_webhook_events")).toEqual([{ idempotency_key: key }])

    // a stale body: the event's created_at moved back 26 hours, signed and sent by the service itself
    const stale = JSON.stringify({
      ...asRecord(JSON.parse(delivered)),
      created_at: new Date(Date.now() - 26 * 3_600_000).toISOString()
    })
    yield* sql`UPDATE webhook_events SET body = ${stale} WHERE id = ${eventId}`
    yield* Effect.flatMap(WebhookAdmin, (admin) => admin.replay({ eventId })).pipe(Effect.provide(WebhookAdmin.Default))
    yield* until("the stale delivery", attempts, (found) => found.length >= 4)
    // refused before the duplicate check (a duplicate would be 200)
    expect((yield* attempts)[3]).toEqual({ attempt: 4, status_code: 400 })
    expect(calls).toHaveLength(2)
  })

describe("the webhook receiver examples against the service's deliveries", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    for (const [name, start] of EXAMPLES) {
      it.scoped(
        `${name}: verifies the raw body, acts once through retries and redeliveries, refuses forged and stale`,
        () => conformance(start),
        60_000
      )
    }
  })
})
