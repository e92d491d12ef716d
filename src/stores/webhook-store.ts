import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schema } from "effect"
import {
  DEPOSIT_KEY_PARTS,
  type DepositKeyParts,
  isRepeatablePaymentEvent,
  paymentEventKey
} from "../domain/webhook-events.js"
import { newId } from "../ids.js"
import { decodeAll, decodeScalar } from "./rows.js"

// ---- idempotency keys (X-FACET-IDEMPOTENCY-KEY): each format once, in the domain (src/domain/webhook-events.ts,
// which receivers use too); their SQL forms here

export {
  type DepositKeyParts,
  depositConfirmedKey,
  orderEventKey,
  paymentEventKey,
  refundEventKey,
  withdrawalEventKey
} from "../domain/webhook-events.js"

/** The deposit key parts as SQL over a row alias (`c.chain || ':' || …`); the alias is code, never input. */
const depositPartsSql = (alias: string) => DEPOSIT_KEY_PARTS.map((part) => `${alias}.${part}`).join(" || ':' || ")

// ---- rows

/** An event claimed for an attempt, with the merchant's (sealed) secret to sign it. */
const ClaimedEvent = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  event: Schema.String,
  idempotency_key: Schema.String,
  destination: Schema.String,
  body: Schema.String,
  attempts: Schema.Number,
  created_at: Schema.DateFromSelf,
  webhook_secret: Schema.String
})
export type ClaimedEvent = typeof ClaimedEvent.Type

/** An event as the operators' delivery lists show it. */
export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  event: Schema.String,
  idempotency_key: Schema.String,
  destination: Schema.NullOr(Schema.String),
  status: Schema.String,
  attempts: Schema.Number,
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.DateFromSelf,
  created_at: Schema.DateFromSelf
})
export type DeliveryRow = typeof DeliveryRow.Type

const IdRow = Schema.Struct({ id: Schema.String })
const CountRow = Schema.Struct({ n: Schema.Number })

/** Which problem deliveries an operator lists: still retried after a failure, dead, or both. */
export type ProblemFilter = "failing" | "dead" | "problems"

/** A new event of the outbox, its body serialized once (delivery signs and sends these bytes). */
export interface NewWebhookEvent {
  readonly merchantId: string
  readonly event: string
  readonly idempotencyKey: string
  readonly orderId: string | null
  readonly destination: string | null
  readonly body: string
  /** The order's (withdrawal's, refund's) events it is one of, and its place among them (`nextSequence`). */
  readonly stream?: { readonly name: string; readonly sequence: number }
}

/** One delivery attempt as it went. */
export interface WebhookAttempt {
  readonly eventId: string
  readonly attempt: number
  readonly destination: string
  readonly startedAt: Date
  readonly finishedAt: Date
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  readonly excerpt: string | null
}

/** What an attempt leaves its event at: delivered, dead, or pending until `nextAttemptAt`. */
export interface AttemptOutcome {
  readonly status: "delivered" | "dead" | "pending"
  readonly nextAttemptAt: Date
  readonly deliveredAt: Date | null
  readonly deadAt: Date | null
}

/**
 * Every statement on the webhook outbox: `webhook_events` (one per merchant and idempotency key, or, for a
 * `wallet.deposit.confirmed`, one per deposit by its `transaction_id`) and `webhook_attempts` (each delivery
 * attempt). The attribution store composes the deposit events fragment into its confirmation statement.
 */
export class WebhookStore extends Effect.Service<WebhookStore>()("facet/WebhookStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** `depositConfirmedKey` as a SQL expression over the row alias `alias`. */
    const depositConfirmedKeySql = (alias: string) =>
      sql.literal(`'wallet.deposit.confirmed:' || ${depositPartsSql(alias)}`)

    /** `paymentEventKey` as a SQL expression over the row alias `alias`. */
    const paymentEventKeySql = (alias: string, bodyEvent: string) =>
      sql`${sql.literal(`'deposit:' || ${depositPartsSql(alias)}`)} || ':' || ${bodyEvent}`

    /** An event, written once per key (a repeat of the same key is a no-op); the caller's transaction holds it. */
    const insertEvent = (event: NewWebhookEvent) =>
      sql`
        INSERT INTO webhook_events ${sql.insert({
          id: newId("evt"),
          merchant_id: event.merchantId,
          event: event.event,
          idempotency_key: event.idempotencyKey,
          order_id: event.orderId,
          destination: event.destination,
          body: event.body,
          status: event.destination === null ? "no_destination" : "pending",
          stream: event.stream?.name ?? null,
          sequence: event.stream?.sequence ?? null
        })}
        ON CONFLICT (merchant_id, idempotency_key) WHERE transaction_id IS NULL DO NOTHING`.pipe(Effect.asVoid)

    /**
     * The next place in a stream (one order's, withdrawal's or refund's events): 1 for its first event. The
     * stream is locked to the end of the caller's transaction (an advisory lock on its name), so two
     * transactions writing events of one order number them one after the other.
     */
    const nextSequence = (stream: string) =>
      Effect.gen(function* () {
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${stream}, 53))`
        // a statement of its own after the lock: its snapshot sees what the previous holder committed
        return (
          (yield* sql`SELECT coalesce(max(sequence), 0)::int AS n FROM webhook_events WHERE stream = ${stream}`.pipe(
            Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
          )) + 1
        )
      })

    /**
     * Which time this is that a payment gets `bodyEvent`: a reorg can reverse and restore the same payment more
     * than once, and each time is a delivery of its own. The n-th `payment.reversed` / `payment.restored` is
     * n, counted from the ones already in the outbox (their keys, `#n` from the second on), in the caller's
     * transaction; every other event happens once (1). The body carries it as `occurrence` and its key is
     * made from that body (`idempotencyKeyOf`: the n-th ends in `#n`; docs/reference/decisions.md).
     */
    const paymentOccurrence = (payment: DepositKeyParts & { readonly merchant_id: string }, bodyEvent: string) =>
      Effect.gen(function* () {
        if (!isRepeatablePaymentEvent(bodyEvent)) return 1
        const key = paymentEventKey(payment, bodyEvent)
        return (
          (yield* sql`
          SELECT count(*)::int AS n FROM webhook_events
          WHERE merchant_id = ${payment.merchant_id} AND (idempotency_key = ${key} OR idempotency_key LIKE ${`${key}#%`})`.pipe(
            Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
          )) + 1
        )
      })

    /**
     * Fragment: `wallet.deposit.confirmed` for the confirmed deposits of the caller's CTE `source` that are to
     * deposit addresses (transactions rows plus the deposit address's `external_user_id` and an `event_id`),
     * as the `deposit_events` part of the caller's statement; its body built once, here, as the compact JSON
     * of the `wallet_deposit_body` row type (wire order).
     */
    const depositConfirmedEvents = (source: string, now: string) => {
      const c = sql.literal(source)
      return sql`
        deposit_events AS (
          INSERT INTO webhook_events (id, merchant_id, event, transaction_id, idempotency_key, destination, body, status)
          SELECT ${c}.event_id, ${c}.merchant_id, 'wallet.deposit.confirmed', ${c}.id,
            ${depositConfirmedKeySql(source)},
            m.webhook_url,
            to_json(ROW('wallet.deposit.confirmed', ${c}.deposit_address_id, ${c}.external_user_id, ${c}.wallet_id, ${c}.chain, ${c}.currency,
              trim_scale(${c}.amount)::text, ${c}.tx_hash, ${c}.from_address, ${c}.to_address, ${c}.event_index, ${c}.block_number, ${c}.confirmations,
              to_char(${c}.confirmed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), ${now}::text)::wallet_deposit_body)::text,
            CASE WHEN m.webhook_url IS NULL THEN 'no_destination' ELSE 'pending' END
          FROM ${c} JOIN merchants m ON m.id = ${c}.merchant_id
          WHERE ${c}.deposit_address_id IS NOT NULL
          -- one per deposit, by its transaction (the id a transfer mined again keeps; migration 0020)
          ON CONFLICT (transaction_id) WHERE transaction_id IS NOT NULL DO NOTHING
        )`
    }

    /**
     * Claims due events for an attempt each: one per merchant per round (not of the `saturated` merchants),
     * SKIP LOCKED so several processes share the work and never claim the same attempt; a claimed event is
     * held for `lease` (due again after it if its worker crashed). One order's (withdrawal's, refund's) events
     * go in their order: an event waits while an earlier one of its stream is pending (being retried, or in
     * flight); a dead one or one without a destination holds nothing back.
     */
    const claimDue = (limit: number, saturated: ReadonlyArray<string>, lease: Duration.Duration) =>
      sql`
        WITH candidates AS (
          SELECT DISTINCT ON (w.merchant_id) w.id FROM webhook_events w
          WHERE ${sql.and([
            sql`w.status = 'pending'`,
            sql`w.next_attempt_at <= now()`,
            ...(saturated.length > 0 ? [sql`NOT ${sql.in("w.merchant_id", saturated)}`] : []),
            sql`(w.stream IS NULL OR NOT EXISTS (
              SELECT 1 FROM webhook_events p
              WHERE p.stream = w.stream AND p.sequence < w.sequence AND p.status = 'pending'))`
          ])}
          ORDER BY w.merchant_id, w.next_attempt_at
        ), locked AS (
          SELECT e.id FROM webhook_events e JOIN candidates c ON c.id = e.id
          WHERE e.status = 'pending' AND e.next_attempt_at <= now()
          ORDER BY e.next_attempt_at LIMIT ${limit}
          FOR UPDATE OF e SKIP LOCKED
        )
        UPDATE webhook_events e
           SET attempts = e.attempts + 1, next_attempt_at = now() + ${`${Duration.toMillis(lease)} milliseconds`}::interval
          FROM locked, merchants m
         WHERE e.id = locked.id AND m.id = e.merchant_id
        RETURNING e.id, e.merchant_id, e.event, e.idempotency_key, e.destination, e.body, e.attempts, e.created_at,
                  m.webhook_secret`.pipe(Effect.flatMap(decodeAll(ClaimedEvent)))

    /** An attempt recorded and its event settled, in one transaction. */
    const recordAttempt = (attempt: WebhookAttempt, outcome: AttemptOutcome) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`INSERT INTO webhook_attempts ${sql.insert({
            id: newId("att"),
            event_id: attempt.eventId,
            attempt: attempt.attempt,
            destination: attempt.destination,
            started_at: attempt.startedAt,
            finished_at: attempt.finishedAt,
            status_code: attempt.statusCode,
            latency_ms: attempt.latencyMs,
            error: attempt.error,
            response_excerpt: attempt.excerpt
          })} ON CONFLICT (event_id, attempt) DO NOTHING`
          // only the holder of this attempt may settle it (a stale worker past its lease may not)
          yield* sql`
            UPDATE webhook_events SET
              status = ${outcome.status},
              next_attempt_at = ${outcome.nextAttemptAt},
              last_status_code = ${attempt.statusCode},
              last_error = ${attempt.error},
              delivered_at = ${outcome.deliveredAt},
              dead_at = ${outcome.deadAt}
            WHERE id = ${attempt.eventId} AND attempts = ${attempt.attempt} AND status = 'pending'`
        })
      )

    /** An attempt handed back unfinished (a graceful stop): due again now, if it is still this attempt's. */
    const handBack = (eventId: string, attempt: number) =>
      sql`UPDATE webhook_events SET next_attempt_at = now()
          WHERE id = ${eventId} AND attempts = ${attempt} AND status = 'pending'`.pipe(Effect.asVoid)

    /** Failing (pending after an error), dead, or both; oldest first, at most 1000. */
    const problems = (filter: ProblemFilter, merchantId?: string) => {
      const failing = sql`(status = 'pending' AND last_error IS NOT NULL)`
      const dead = sql`status = 'dead'`
      const which = filter === "failing" ? failing : filter === "dead" ? dead : sql`(${failing} OR ${dead})`
      const where = merchantId === undefined ? which : sql`${which} AND merchant_id = ${merchantId}`
      return sql`
        SELECT id, merchant_id, event, idempotency_key, destination, status, attempts, last_status_code, last_error,
               next_attempt_at, created_at
        FROM webhook_events WHERE ${where} ORDER BY created_at LIMIT 1000`.pipe(Effect.flatMap(decodeAll(DeliveryRow)))
    }

    /**
     * Makes events due now again: one event by id (whatever its state), or every failing and dead event of
     * a merchant. Each goes where its events go today: its order's notify_url (an order's events and its
     * refunds'), else the merchant's current webhook_url — never the URL stored with it, which may be a host
     * the merchant has since left (issue 53). None of either: kept as `no_destination`. How many.
     */
    const replay = (target: { readonly eventId: string } | { readonly merchantId: string }) => {
      const which =
        "eventId" in target
          ? sql`e.id = ${target.eventId}`
          : sql`e.merchant_id = ${target.merchantId} AND (e.status = 'dead' OR (e.status = 'pending' AND e.last_error IS NOT NULL))`
      // a refund's event stored before the outbox kept its order names the order in its body only
      const today = sql`coalesce(
        (SELECT o.notify_url FROM orders o
         WHERE o.id = coalesce(e.order_id, CASE WHEN e.event = 'refund.updated' THEN e.body::jsonb -> 'refund' ->> 'order_id' END)),
        m.webhook_url)`
      return sql`
        UPDATE webhook_events e
           SET destination = ${today},
               status = CASE WHEN ${today} IS NULL THEN 'no_destination' ELSE 'pending' END,
               next_attempt_at = now(), dead_at = NULL, delivered_at = NULL
          FROM merchants m
         WHERE m.id = e.merchant_id AND ${which}
        RETURNING e.id`.pipe(
        Effect.flatMap(decodeAll(IdRow)),
        Effect.map((rows) => rows.length)
      )
    }

    /**
     * A devnet reset: the events of the chains that go (payments' `order.updated`, deposits' and
     * withdrawals' events) and their attempts. How many events went.
     */
    const forgetChainEvents = Effect.gen(function* () {
      // an order's order.paid goes too: its orders are unpaid again, and paid again it is announced again
      const chainEvents = sql`SELECT id FROM webhook_events WHERE idempotency_key LIKE 'deposit:%' OR idempotency_key LIKE '%:order.paid:PAID' OR event IN ('wallet.deposit.confirmed', 'wallet.withdrawal.completed', 'wallet.withdrawal.failed')`
      yield* sql`DELETE FROM webhook_attempts WHERE event_id IN (${chainEvents})`
      return yield* sql`
      WITH d AS (DELETE FROM webhook_events WHERE id IN (${chainEvents}) RETURNING 1) SELECT count(*)::int AS n FROM d`.pipe(
        Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
      )
    })

    return {
      depositConfirmedKeySql,
      paymentEventKeySql,
      insertEvent,
      nextSequence,
      paymentOccurrence,
      depositConfirmedEvents,
      claimDue,
      recordAttempt,
      handBack,
      problems,
      replay,
      forgetChainEvents
    } as const
  })
}) {}
