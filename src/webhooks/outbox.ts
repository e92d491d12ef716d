import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../ids.js"

export interface OutboxEvent {
  readonly merchantId: string
  /** Transport event name (X-FACET-EVENT), e.g. `order.updated`. */
  readonly event: string
  /** X-FACET-IDEMPOTENCY-KEY in the contract's format; one event per key per merchant. */
  readonly idempotencyKey: string
  readonly orderId?: string
  /** Where it goes: the order's notify_url, else the merchant's webhook_url (none: kept, not dropped). */
  readonly destination: string | null
  readonly body: unknown
}

/**
 * The webhook outbox. Events are written in the same transaction as the change they announce, and
 * serialized here, once: delivery signs and sends these exact bytes on every attempt.
 */
export class WebhookOutbox extends Effect.Service<WebhookOutbox>()("facet/WebhookOutbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** Many events in one statement (a block's deposits); each is still written once per key. */
    const enqueueMany = Effect.fn("WebhookOutbox.enqueueMany")(function*(events: ReadonlyArray<OutboxEvent>) {
      if (events.length === 0) return
      // one array per column: a handful of parameters however many events
      yield* sql`
        INSERT INTO webhook_events (id, merchant_id, event, idempotency_key, order_id, destination, body, status)
        SELECT * FROM unnest(
          ${events.map(() => newId("evt"))}::text[], ${events.map((e) => e.merchantId)}::text[], ${events.map((e) => e.event)}::text[],
          ${events.map((e) => e.idempotencyKey)}::text[], ${events.map((e) => e.orderId ?? null)}::text[],
          ${events.map((e) => e.destination)}::text[], ${events.map((e) => JSON.stringify(e.body))}::text[],
          ${events.map((e) => (e.destination === null ? "no_destination" : "pending"))}::text[])
        ON CONFLICT (merchant_id, idempotency_key) DO NOTHING`
    })
    const enqueue = (event: OutboxEvent) => enqueueMany([event])
    return { enqueue, enqueueMany } as const
  })
}) {}
