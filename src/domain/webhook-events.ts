import { Schema } from "effect"
import { Order } from "./order.js"
import { RefundWebhook as RefundWebhookFields } from "./refund.js"
import { WithdrawalWebhook as WithdrawalWebhookFields } from "./withdrawal.js"

/**
 * Every webhook the service sends, declared once: the outbox encodes each body through these schemas
 * (src/webhooks/outbox.ts), the OpenAPI document publishes them, and receivers (src/webhooks/receiver.ts, the
 * `@facet-pay/client/webhooks` kit) decode with them. Each event's idempotency key (X-FACET-IDEMPOTENCY-KEY)
 * is a function of its body, written here once (the store's SQL forms of the deposit keys spell the same parts).
 */

/** The payment an `order.updated` chain event is about. */
export const Payment = Schema.Struct({
  chain: Schema.String,
  currency: Schema.String,
  tx_hash: Schema.String,
  to_address: Schema.String,
  event_index: Schema.Number,
  amount: Schema.String,
  block_number: Schema.Number,
  confirmations: Schema.Number
})

/**
 * What happened to an order (the body's `event`; the transport event is `order.updated`). `order.paid` is the
 * order's transition to PAID, once per order (the event to fulfil on); `payment.overpaid` a payment that
 * became final while the order was PAID already and did not pay it (money beyond it, the merchant may refund).
 */
export const OrderBodyEvent = Schema.Literal(
  "payment.detected",
  "payment.confirmed",
  "payment.reversed",
  "payment.restored",
  "payment.overpaid",
  "order.paid",
  "order.expired",
  "order.partially_paid"
)
export type OrderBodyEvent = typeof OrderBodyEvent.Type

/**
 * The body events about the order itself rather than one payment: once per order and status each, keyed by
 * the order (`{order_id}:{body_event}:{STATUS}`), never by a transfer.
 */
export const ORDER_LEVEL_EVENTS = ["order.paid", "order.expired", "order.partially_paid"] as const
export const isOrderLevelEvent = (bodyEvent: string): boolean => ORDER_LEVEL_EVENTS.some((event) => event === bodyEvent)

/**
 * An event's place among the events of its order (its withdrawal's, its refund's): 1, 2, … in the order they
 * happened. The service delivers them in that order (a later one waits while an earlier one is still being
 * retried); a receiver that keeps the latest state ignores a body whose `sequence` is lower than one it has
 * applied (a replay, or a dead event sent again). Absent on events stored before it was written.
 */
export const Sequence = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({
  description:
    "This event's place among the events of its order (withdrawal, refund): 1, 2, …; a receiver keeping the latest state ignores a body whose sequence is lower than one it has applied."
})

/**
 * The body events a reorg can repeat for one payment (reversed out of the chain, mined again, reversed
 * again, …): each time is a delivery of its own, and its body says which time it is (`occurrence`).
 */
export const REPEATABLE_PAYMENT_EVENTS = ["payment.reversed", "payment.restored"] as const
export const isRepeatablePaymentEvent = (bodyEvent: string): boolean =>
  REPEATABLE_PAYMENT_EVENTS.some((event) => event === bodyEvent)

/**
 * Which `payment.reversed` (or `payment.restored`) of this payment a body is: 1 for the first, n for the n-th.
 * It is signed with the body, and the n-th one's idempotency key ends in `#n` made from it, so a receiver
 * derives the whole key from the signed bytes. Absent on every other event, and on the reversals and
 * restorations the service stored before it wrote the field (those count as the first: `idempotencyKeyOf`).
 */
export const Occurrence = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)).annotations({
  description:
    "On payment.reversed and payment.restored: which reversal (restoration) of this payment this is, 1 for the first; the n-th one's X-FACET-IDEMPOTENCY-KEY ends in #n (n ≥ 2)."
})

/**
 * Body of `order.updated`: the order as it is now; `payment` on the chain events (payment.*), never on the
 * order's own (order.*); `occurrence` on `payment.reversed` / `payment.restored`; `sequence` its place among
 * the order's events.
 */
export const OrderWebhook = Schema.Struct({
  event: OrderBodyEvent,
  order: Order,
  payment: Schema.optional(Payment),
  occurrence: Schema.optional(Occurrence),
  sequence: Schema.optional(Sequence),
  created_at: Schema.String
})

/** Body of `wallet.withdrawal.completed` / `.failed`, with its place among the withdrawal's events. */
export const WithdrawalWebhook = Schema.Struct({
  ...WithdrawalWebhookFields.fields,
  sequence: Schema.optional(Sequence)
}).annotations({ identifier: "WithdrawalWebhook" })

/** Body of `refund.updated`, with its place among the refund's events. */
export const RefundWebhook = Schema.Struct({
  ...RefundWebhookFields.fields,
  sequence: Schema.optional(Sequence)
}).annotations({ identifier: "RefundWebhook" })

/** Body of `wallet.deposit.confirmed` (the service builds it in SQL, in this field order: migration 0005). */
export const WalletDepositWebhook = Schema.Struct({
  event: Schema.Literal("wallet.deposit.confirmed"),
  deposit_address_id: Schema.String,
  external_user_id: Schema.String,
  wallet_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  tx_hash: Schema.String,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  event_index: Schema.Number,
  block_number: Schema.Number,
  confirmations: Schema.Number,
  confirmed_at: Schema.String,
  created_at: Schema.String
})

/** The body schema of each transport event (X-FACET-EVENT). */
export const WebhookBodies = {
  "order.updated": OrderWebhook,
  "wallet.deposit.confirmed": WalletDepositWebhook,
  "wallet.withdrawal.completed": WithdrawalWebhook,
  "wallet.withdrawal.failed": WithdrawalWebhook,
  "refund.updated": RefundWebhook
} as const

/** X-FACET-EVENT: every event the service sends. */
export type WebhookEventType = keyof typeof WebhookBodies
export const WEBHOOK_EVENT_TYPES: ReadonlyArray<WebhookEventType> = [
  "order.updated",
  "wallet.deposit.confirmed",
  "wallet.withdrawal.completed",
  "wallet.withdrawal.failed",
  "refund.updated"
]

/** Any webhook body: the body's own `event` tells them apart (order events are named for what happened). */
export const WebhookBody = Schema.Union(OrderWebhook, WalletDepositWebhook, WithdrawalWebhook, RefundWebhook)
export type WebhookBody = typeof WebhookBody.Type

/** A webhook as the outbox writes it and a receiver gets it: the transport event with its body. */
export type WebhookEvent =
  | { readonly type: "order.updated"; readonly body: typeof OrderWebhook.Type }
  | { readonly type: "wallet.deposit.confirmed"; readonly body: typeof WalletDepositWebhook.Type }
  | {
      readonly type: "wallet.withdrawal.completed" | "wallet.withdrawal.failed"
      readonly body: typeof WithdrawalWebhook.Type
    }
  | { readonly type: "refund.updated"; readonly body: typeof RefundWebhook.Type }

/** The transport event (X-FACET-EVENT) a body is sent as. */
export const webhookEventOf = (body: WebhookBody): WebhookEvent => {
  switch (body.event) {
    case "wallet.deposit.confirmed":
      return { type: body.event, body }
    case "wallet.withdrawal.completed":
    case "wallet.withdrawal.failed":
      return { type: body.event, body }
    case "refund.updated":
      return { type: body.event, body }
    default:
      return { type: "order.updated", body }
  }
}

// ---- idempotency keys (X-FACET-IDEMPOTENCY-KEY): each format once

/** The parts of a deposit that name it on its chain, in the order its event keys spell them. */
export const DEPOSIT_KEY_PARTS = ["chain", "currency", "tx_hash", "to_address", "event_index"] as const
export interface DepositKeyParts {
  readonly chain: string
  readonly currency: string
  readonly tx_hash: string
  readonly to_address: string
  readonly event_index: number
}
const depositParts = (d: DepositKeyParts) => DEPOSIT_KEY_PARTS.map((part) => String(d[part])).join(":")

/** `wallet.deposit.confirmed:<chain>:<currency>:<tx_hash>:<to_address>:<event_index>`: one per deposit. */
export const depositConfirmedKey = (d: DepositKeyParts) => `wallet.deposit.confirmed:${depositParts(d)}`

/**
 * `deposit:<chain>:<currency>:<tx_hash>:<to_address>:<event_index>:<body event>`: an order payment's
 * `order.updated`. The n-th `payment.reversed` / `payment.restored` of one payment (`occurrence` n ≥ 2, a
 * chain that reorganises again) is a delivery of its own and ends in `#n`; its body carries that n.
 */
export const paymentEventKey = (d: DepositKeyParts, bodyEvent: string, occurrence = 1) =>
  `deposit:${depositParts(d)}:${bodyEvent}${occurrence >= 2 ? `#${occurrence}` : ""}`

/** `<order_id>:<body event>:<status>`: an `order.updated` that is no chain event (expiry). */
export const orderEventKey = (orderId: string, bodyEvent: string, status: string) => `${orderId}:${bodyEvent}:${status}`

/** `<event>:<withdrawal_id>:<tx_hash or empty>`: a withdrawal's outcome. */
export const withdrawalEventKey = (event: string, withdrawalId: string, txHash: string | null) =>
  `${event}:${withdrawalId}:${txHash ?? ""}`

/** `refund.updated:<refund_id>:<STATUS>`: one per status a refund reaches. */
export const refundEventKey = (refundId: string, status: string) => `refund.updated:${refundId}:${status}`

/**
 * The idempotency key of a webhook, from its body alone, the `#n` of a repeated reversal or restoration
 * included (from its `occurrence`). The service makes each key with this function from the body it stores;
 * the key travels in a header the signature does not cover, so a receiver that derives it from the signed
 * body cannot be made to take a replay for a new event.
 */
export const idempotencyKeyOf = (body: WebhookBody): string => {
  switch (body.event) {
    case "wallet.deposit.confirmed":
      return depositConfirmedKey(body)
    case "wallet.withdrawal.completed":
    case "wallet.withdrawal.failed":
      return withdrawalEventKey(body.event, body.withdrawal.withdrawal_id, body.withdrawal.tx_hash)
    case "refund.updated":
      return refundEventKey(body.refund.refund_id, body.refund.status)
    default:
      return body.payment === undefined || isOrderLevelEvent(body.event)
        ? orderEventKey(body.order.order_id, body.event, body.order.status)
        : paymentEventKey(body.payment, body.event, isRepeatablePaymentEvent(body.event) ? (body.occurrence ?? 1) : 1)
  }
}

// ---- one resource's events, in order

/**
 * The events a body is one of, delivered in order and numbered by `sequence`: its order's, withdrawal's or
 * refund's (`order:<id>`, `withdrawal:<id>`, `refund:<id>`). A deposit address's deposits are each an event of
 * their own (none).
 */
export const streamOf = (body: WebhookBody): string | undefined => {
  switch (body.event) {
    case "wallet.deposit.confirmed":
      return undefined
    case "wallet.withdrawal.completed":
    case "wallet.withdrawal.failed":
      return `withdrawal:${body.withdrawal.withdrawal_id}`
    case "refund.updated":
      return `refund:${body.refund.refund_id}`
    default:
      return `order:${body.order.order_id}`
  }
}

/** The order a body is about (an order's events, its refunds'), where its events go. */
export const orderIdOf = (body: WebhookBody): string | undefined => {
  switch (body.event) {
    case "wallet.deposit.confirmed":
    case "wallet.withdrawal.completed":
    case "wallet.withdrawal.failed":
      return undefined
    case "refund.updated":
      return body.refund.order_id
    default:
      return body.order.order_id
  }
}

/** The body with its place among its resource's events (a deposit's body has none: as it is). */
export const withSequence = (body: WebhookBody, sequence: number): WebhookBody =>
  body.event === "wallet.deposit.confirmed" ? body : { ...body, sequence }

/**
 * Whether a verified event is older than one already applied for the same order (withdrawal, refund): its
 * `sequence` at or below `applied`, the highest sequence applied. A receiver keeping the latest status ignores
 * such an event's status (it still records its key and answers 2xx). An event without a sequence (stored
 * before the field) is never older.
 */
export const isOlderEvent = (body: WebhookBody, applied: number | undefined): boolean =>
  applied !== undefined && body.event !== "wallet.deposit.confirmed" && (body.sequence ?? Infinity) <= applied

/**
 * Whether a delivered X-FACET-IDEMPOTENCY-KEY is the one the body makes, exactly. A `#n` is accepted only when
 * the signed body's `occurrence` is n: a captured reversal replayed under another `#n` is refused. A body
 * stored before the service wrote `occurrence` makes the key without `#n`, so its `#n` deliveries are refused
 * too (the kit cannot tell them from a replay; docs/guides/webhooks.md says what that costs).
 */
export const idempotencyKeyMatches = (body: WebhookBody, delivered: string): boolean =>
  delivered === idempotencyKeyOf(body)
