import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeFirst } from "./rows.js"

/** What a first request with a key recorded: the resource it made and the status it answered. */
const IdempotencyRow = Schema.Struct({
  request_hash: Schema.String,
  resource_id: Schema.String,
  status_code: Schema.Number
})
export type IdempotencyRow = typeof IdempotencyRow.Type

/** Every statement on `idempotency_keys` (keys of X-Service-Idempotency-Key, per merchant and endpoint). */
export class IdempotencyStore extends Effect.Service<IdempotencyStore>()("facet/IdempotencyStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Records a key unless it is recorded: true when this call recorded it. */
    const insertIfAbsent = (row: {
      readonly merchantId: string
      readonly endpoint: string
      readonly key: string
      readonly requestHash: string
      readonly resourceId: string
      readonly statusCode: number
    }) =>
      Effect.map(
        sql`
          INSERT INTO idempotency_keys (merchant_id, endpoint, key, request_hash, status_code, resource_id)
          VALUES (${row.merchantId}, ${row.endpoint}, ${row.key}, ${row.requestHash}, ${row.statusCode}, ${row.resourceId})
          ON CONFLICT DO NOTHING RETURNING key`,
        (inserted) => inserted.length > 0
      )

    const find = (merchantId: string, endpoint: string, key: string) =>
      sql`
        SELECT request_hash, resource_id, status_code FROM idempotency_keys
        WHERE merchant_id = ${merchantId} AND endpoint = ${endpoint} AND key = ${key}`.pipe(
        Effect.flatMap(decodeFirst(IdempotencyRow))
      )

    /** A devnet reset: the keys of an endpoint whose resources went with the chains. */
    const forgetEndpoint = (endpoint: string) => sql`DELETE FROM idempotency_keys WHERE endpoint = ${endpoint}`

    return { insertIfAbsent, find, forgetEndpoint } as const
  })
}) {}
