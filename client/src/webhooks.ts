import { createHmac, timingSafeEqual } from "node:crypto"
import { Clock, Duration, Effect, Either, ParseResult, Schema } from "effect"
import {
  idempotencyKeyMatches,
  WebhookBody,
  type WebhookEvent,
  webhookEventOf
} from "../../src/domain/webhook-events.js"

/**
 * `@facet-pay/client/webhooks`: receive Facet's webhooks safely (Node: it uses `node:crypto`).
 *
 * `verifyFacetWebhook(rawBody, headers, secret)` checks, in this order:
 * 1. `X-FACET-SIGNATURE` is 64 lowercase hex characters and equals HMAC-SHA256 of the **exact raw bytes** of the
 *    body keyed with the webhook secret (`FACET_WEBHOOK_SECRET`, the `whsec_…` string itself), compared in
 *    constant time. Hand it the bytes as they arrived (`express.raw`, a raw-body parser in Fastify, the
 *    chunks of Node's request): a body parsed and serialized again is other bytes and fails. → 401 `signature`
 * 2. Only then is the body parsed and decoded with the event schemas (unknown fields are ignored: the service
 *    may add fields). A value outside a closed set this version knows (an event, a status, a chain) is
 *    refused, on purpose: the service keeps retrying and then keeps the event dead until it is replayed, so
 *    after upgrading the kit nothing is lost; accepted as "unknown" it would be acknowledged and gone
 *    (docs/guides/client.md). → 400 `body`
 * 3. `X-FACET-EVENT` names the body's event, and `X-FACET-IDEMPOTENCY-KEY` is exactly the key the body makes
 *    (`idempotencyKeyOf`; the n-th reversal or restoration of a payment adds `#n`, n being the body's signed
 *    `occurrence`). Those headers are not signed: deriving the whole key from the signed body means a replay
 *    cannot pass for a new event, not even under a made-up `#n`. → 400 `event` / `idempotency_key`
 * 4. The body's `created_at` is no older than `maxAge` and no further in the future than `maxFutureSkew`.
 *    → 400 `stale`
 *
 * Why the body's `created_at` and not a header: the signature covers the body only, so a timestamp header
 * could be changed by whoever replays a captured delivery; the body's cannot. The service stores each body
 * once, when the event happens, and signs and sends those same bytes on every attempt
 * (src/webhooks/outbox.ts, dispatcher.ts): `created_at` is when the event happened, not when this attempt
 * left, and the service retries a failing receiver for 24 hours (about 10 s, 30 s, 2 min, 10 min, 30 min,
 * 1 h, then every 2 h). So `maxAge` defaults to 25 hours: a shorter one refuses the service's own late
 * retries (a receiver down for 10 minutes would refuse every retry after it, and lose the event). Keep the
 * idempotency keys you store at least as long as `maxAge`: the keys stop duplicates, the age stops replays
 * older than the keys you keep. An operator may replay a dead event later than that: give such a replay a
 * larger `maxAge` (or none: `Infinity`).
 *
 * Then: **persist the idempotency key before acting**, in the transaction of the action (a duplicate changes
 * nothing), and answer 2xx only once that is committed (client/examples/).
 */

export {
  DEPOSIT_KEY_PARTS,
  idempotencyKeyMatches,
  idempotencyKeyOf,
  isOlderEvent,
  Occurrence,
  OrderBodyEvent,
  OrderWebhook,
  Payment,
  RefundWebhook,
  Sequence,
  streamOf,
  WalletDepositWebhook,
  WEBHOOK_EVENT_TYPES,
  WebhookBodies,
  WebhookBody,
  type WebhookEventType,
  WithdrawalWebhook
} from "../../src/domain/webhook-events.js"

/** A verified webhook: its transport event (X-FACET-EVENT), the idempotency key to persist, the typed body. */
export type FacetWebhookEvent = {
  /** X-FACET-IDEMPOTENCY-KEY, checked against the body: store it before acting. */
  readonly idempotencyKey: string
  /** X-FACET-DELIVERY-ID: the event's id (the same on every attempt). */
  readonly deliveryId: string | undefined
  /** X-FACET-ATTEMPT: 1, 2, … */
  readonly attempt: number | undefined
} & WebhookEvent

/** Why a delivery was refused. `status`: what a receiver should answer (401 unsigned, 400 otherwise). */
export class FacetWebhookError extends Schema.TaggedError<FacetWebhookError>()("FacetWebhookError", {
  reason: Schema.Literal("signature", "body", "event", "idempotency_key", "stale"),
  message: Schema.String
}) {
  get status(): 401 | 400 {
    return this.reason === "signature" ? 401 : 400
  }
}

/** Web `Headers`, or Node's `IncomingHttpHeaders` (any record of names in any case). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

export interface VerifyFacetWebhookOptions {
  /** How old the body's `created_at` may be (default 25 hours: the service's 24 h of retries, and an hour more). */
  readonly maxAge?: Duration.DurationInput
  /** How far ahead of this clock `created_at` may be (default 5 minutes of clock skew). */
  readonly maxFutureSkew?: Duration.DurationInput
  /**
   * The clock `created_at` is checked against, in epoch milliseconds (default `Date.now`). For your tests and
   * for replaying stored deliveries; the Effect variant reads its `Clock` instead.
   */
  readonly now?: () => number
}

const DEFAULT_MAX_AGE = Duration.hours(25)
const DEFAULT_FUTURE_SKEW = Duration.minutes(5)
const SIGNATURE = /^[a-f0-9]{64}$/

/** X-FACET-SIGNATURE for `rawBody`: lowercase hex HMAC-SHA256 keyed with the secret (for your receiver's tests). */
export const signFacetWebhook = (rawBody: string | Uint8Array, secret: string): string =>
  createHmac("sha256", secret).update(rawBody).digest("hex")

const headerOf = (headers: WebhookHeaders, name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue
    if (typeof value === "string") return value
    // a header sent twice is no header we can trust
    return value !== undefined && value.length === 1 ? value[0] : undefined
  }
  return undefined
}

const refuse = (reason: FacetWebhookError["reason"], message: string) =>
  Either.left(new FacetWebhookError({ reason, message }))

const decodeBody = Schema.decodeUnknownEither(Schema.parseJson(WebhookBody))

/** The checks, at the time `now` (epoch milliseconds). */
const verifyAt = (
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyFacetWebhookOptions,
  now: number
): Either.Either<FacetWebhookEvent, FacetWebhookError> => {
  // 1. the signature, over the exact bytes, before anything reads them
  const signature = headerOf(headers, "x-facet-signature")
  if (signature === undefined || !SIGNATURE.test(signature))
    return refuse("signature", "X-FACET-SIGNATURE is missing or not 64 lowercase hex characters")
  const given = Buffer.from(signature, "hex")
  const expected = Buffer.from(signFacetWebhook(rawBody, secret), "hex")
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return refuse("signature", "X-FACET-SIGNATURE does not match the body: wrong secret, or not the raw bytes")
  // 2. only a signed body is parsed
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody)
  const decoded = decodeBody(text)
  if (Either.isLeft(decoded))
    return refuse("body", `not a Facet event body: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
  const event = webhookEventOf(decoded.right)
  // 3. the unsigned headers agree with the signed body
  const eventHeader = headerOf(headers, "x-facet-event")
  if (eventHeader !== event.type)
    return refuse("event", `X-FACET-EVENT ${eventHeader ?? "(missing)"} is not the body's event ${event.type}`)
  const key = headerOf(headers, "x-facet-idempotency-key")
  if (key === undefined || !idempotencyKeyMatches(event.body, key))
    return refuse("idempotency_key", `X-FACET-IDEMPOTENCY-KEY ${key ?? "(missing)"} is not the key of this body`)
  // 4. not a replay from long ago (nor from the future)
  const createdAt = Date.parse(event.body.created_at)
  if (Number.isNaN(createdAt)) return refuse("body", `created_at ${event.body.created_at} is not a date`)
  const maxAge = Duration.toMillis(options.maxAge ?? DEFAULT_MAX_AGE)
  if (now - createdAt > maxAge)
    return refuse("stale", `created_at ${event.body.created_at} is older than ${Duration.format(maxAge)}`)
  if (createdAt - now > Duration.toMillis(options.maxFutureSkew ?? DEFAULT_FUTURE_SKEW))
    return refuse("stale", `created_at ${event.body.created_at} is in the future`)
  const attempt = Number(headerOf(headers, "x-facet-attempt"))
  return Either.right({
    ...event,
    idempotencyKey: key,
    deliveryId: headerOf(headers, "x-facet-delivery-id"),
    attempt: Number.isInteger(attempt) && attempt > 0 ? attempt : undefined
  })
}

/** The checks as an Effect (the time from its `Clock`). */
export const verifyFacetWebhookEffect = (
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyFacetWebhookOptions = {}
): Effect.Effect<FacetWebhookEvent, FacetWebhookError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => verifyAt(rawBody, headers, secret, options, now))

/**
 * The checks for code without Effect: the verified event, or a thrown `FacetWebhookError` (answer its `status`).
 */
export const verifyFacetWebhook = (
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyFacetWebhookOptions = {}
): FacetWebhookEvent =>
  Either.getOrThrowWith(verifyAt(rawBody, headers, secret, options, (options.now ?? Date.now)()), (error) => error)

/**
 * The order to fulfil, when this event is its transition to PAID (`order.updated` with body event
 * `order.paid`, sent once per order, keyed `{order_id}:order.paid:PAID`); otherwise undefined. Fulfil once per
 * order id: record the order id with the event's key, in the same transaction (`INSERT … ON CONFLICT DO
 * NOTHING` on an order-id key), and act only when it is new. Never fulfil on `payment.confirmed`,
 * `payment.detected` or `payment.overpaid`: a payment after PAID is `payment.overpaid` (the order's
 * `overpaid_amount` says how much is beyond it), money to refund or keep, never a second sale.
 */
export const orderToFulfil = (event: FacetWebhookEvent) =>
  event.type === "order.updated" && event.body.event === "order.paid" ? event.body.order : undefined
