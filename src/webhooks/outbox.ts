import { Effect } from "effect"
import { WebhookStore } from "../stores/webhook-store.js"

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
 * serialized here, once: delivery signs and sends these exact bytes on every attempt. (A block's
 * `wallet.deposit.confirmed` events are written set-based by the attribution store, into the same table,
 * one per deposit by their `transaction_id`; the events here have none and are one per merchant and key.)
 */
export class WebhookOutbox extends Effect.Service<WebhookOutbox>()("facet/WebhookOutbox", {
  effect: Effect.gen(function* () {
    const store = yield* WebhookStore
    /** One event, written once per key (a repeat of the same key is a no-op). */
    const enqueue = Effect.fn("WebhookOutbox.enqueue")(function* (event: OutboxEvent) {
      yield* store.insertEvent({
        merchantId: event.merchantId,
        event: event.event,
        idempotencyKey: event.idempotencyKey,
        orderId: event.orderId ?? null,
        destination: event.destination,
        body: JSON.stringify(event.body)
      })
    })
    return { enqueue } as const
  }),
  dependencies: [WebhookStore.Default]
}) {}
