import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"

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

export type ProblemFilter = "failing" | "dead" | "problems"

/** Operators' view of webhook delivery: what is failing or dead, and replays. */
export class WebhookAdmin extends Effect.Service<WebhookAdmin>()("facet/WebhookAdmin", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const problems = Effect.fn("WebhookAdmin.problems")(function* (filter: ProblemFilter, merchantId?: string) {
      const failing = sql`(status = 'pending' AND last_error IS NOT NULL)`
      const dead = sql`status = 'dead'`
      const which = filter === "failing" ? failing : filter === "dead" ? dead : sql`(${failing} OR ${dead})`
      const where = merchantId === undefined ? which : sql`${which} AND merchant_id = ${merchantId}`
      return yield* sql`
        SELECT id, merchant_id, event, idempotency_key, destination, status, attempts, last_status_code, last_error,
               next_attempt_at, created_at
        FROM webhook_events WHERE ${where} ORDER BY created_at LIMIT 1000`.pipe(
        Effect.flatMap(Schema.decodeUnknown(Schema.Array(DeliveryRow)))
      )
    })

    /**
     * Makes events due now again: one event by id (whatever its state), or every failing and dead event of
     * a merchant. An event that had no destination takes the merchant's current webhook_url.
     */
    const replay = Effect.fn("WebhookAdmin.replay")(function* (
      target: { readonly eventId: string } | { readonly merchantId: string }
    ) {
      const which =
        "eventId" in target
          ? sql`e.id = ${target.eventId}`
          : sql`e.merchant_id = ${target.merchantId} AND (e.status = 'dead' OR (e.status = 'pending' AND e.last_error IS NOT NULL))`
      const rows = yield* sql<{ id: string }>`
        UPDATE webhook_events e
           SET destination = coalesce(e.destination, m.webhook_url),
               status = CASE WHEN coalesce(e.destination, m.webhook_url) IS NULL THEN 'no_destination' ELSE 'pending' END,
               next_attempt_at = now(), dead_at = NULL, delivered_at = NULL
          FROM merchants m
         WHERE m.id = e.merchant_id AND ${which}
        RETURNING e.id`
      return rows.length
    })

    return { problems, replay } as const
  })
}) {}
