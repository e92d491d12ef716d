import { Effect, Either, Schema } from "effect"
import {
  orderIdOf,
  streamOf,
  WebhookBody,
  type WebhookBodies,
  type WebhookEventType,
  withSequence
} from "../domain/webhook-events.js"
import { WebhookStore } from "../stores/webhook-store.js"

/** An event for the outbox: its transport event (X-FACET-EVENT) with the body that event is declared with. */
export type OutboxEvent = {
  readonly [T in WebhookEventType]: {
    /** Transport event name (X-FACET-EVENT), e.g. `order.updated`. */
    readonly event: T
    readonly body: (typeof WebhookBodies)[T]["Type"]
  }
}[WebhookEventType] & {
  readonly merchantId: string
  /** X-FACET-IDEMPOTENCY-KEY in the contract's format; one event per key per merchant. */
  readonly idempotencyKey: string
  readonly orderId?: string
  /** Where it goes: the order's notify_url, else the merchant's webhook_url (none: kept, not dropped). */
  readonly destination: string | null
}

// every field kept: a field the schema does not (yet) declare still reaches the merchant
const encodeBody = Schema.encodeEither(WebhookBody, { onExcessProperty: "preserve" })

/**
 * The webhook outbox. Events are written in the same transaction as the change they announce, and
 * serialized here, once, through their declared schema (src/domain/webhook-events.ts): delivery signs and
 * sends these exact bytes on every attempt. (A block's `wallet.deposit.confirmed` events are written
 * set-based by the attribution store, into the same table, one per deposit by their `transaction_id`; the
 * events here have none and are one per merchant and key.)
 */
export class WebhookOutbox extends Effect.Service<WebhookOutbox>()("facet/WebhookOutbox", {
  effect: Effect.gen(function* () {
    const store = yield* WebhookStore
    /** A body its schema refuses is a bug of ours: logged loudly, and sent as it is rather than lost. */
    const serialize = (event: OutboxEvent, body: WebhookBody) =>
      Either.match(encodeBody(body), {
        onRight: (encoded) => Effect.succeed(JSON.stringify(encoded)),
        onLeft: (error) =>
          Effect.as(
            Effect.logError("a webhook body does not match its declared schema; sent as it is").pipe(
              Effect.annotateLogs({ event: event.event, idempotency_key: event.idempotencyKey, error: error.message })
            ),
            JSON.stringify(body)
          )
      })
    /**
     * One event, written once per key (a repeat of the same key is a no-op). An order's (withdrawal's, refund's)
     * event takes the next place among that resource's events: its body carries it as `sequence`, and the
     * dispatcher delivers them in that order. A refund's event is filed under its order.
     */
    const enqueue = Effect.fn("WebhookOutbox.enqueue")(function* (event: OutboxEvent) {
      const name = streamOf(event.body)
      const sequence = name === undefined ? undefined : yield* store.nextSequence(name)
      const body = sequence === undefined ? event.body : withSequence(event.body, sequence)
      yield* store.insertEvent({
        merchantId: event.merchantId,
        event: event.event,
        idempotencyKey: event.idempotencyKey,
        orderId: event.orderId ?? orderIdOf(event.body) ?? null,
        destination: event.destination,
        body: yield* serialize(event, body),
        ...(name === undefined || sequence === undefined ? {} : { stream: { name, sequence } })
      })
    })
    return { enqueue } as const
  }),
  dependencies: [WebhookStore.Default]
}) {}
