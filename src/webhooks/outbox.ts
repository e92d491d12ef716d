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
    const enqueue = Effect.fn("WebhookOutbox.enqueue")(function*(event: OutboxEvent) {
      yield* sql`
        INSERT INTO webhook_events (id, merchant_id, event, idempotency_key, order_id, destination, body, status)
        VALUES (${newId("evt")}, ${event.merchantId}, ${event.event}, ${event.idempotencyKey}, ${event.orderId ?? null},
                ${event.destination}, ${JSON.stringify(event.body)},
                ${event.destination === null ? "no_destination" : "pending"})
        ON CONFLICT (merchant_id, idempotency_key) DO NOTHING`
    })
    return { enqueue } as const
  })
}) {}
