import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Redacted, Schema } from "effect"
import { AuditLog, type AuditActor } from "../audit/audit-log.js"
import { newId } from "../ids.js"
import { SecretBox } from "../keys/secret-box.js"
import { displayPrefix, hashSecret, newApiKey, newWebhookSecret } from "./credentials.js"
import type { Principal } from "./principal.js"

const KeyRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  created_by_user_id: Schema.NullOr(Schema.String)
})

/**
 * A merchant's credentials: API keys (issued once in plain text, stored as hashes, resolved to the
 * merchant they act for, revoked at once) and the webhook secret's rotation.
 */
export class ApiKeys extends Effect.Service<ApiKeys>()("facet/ApiKeys", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const audit = yield* AuditLog
    const box = yield* SecretBox

    const findActive = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (keyHash) =>
        sql`SELECT k.id, k.merchant_id, k.scopes, k.created_by_user_id
            FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
            WHERE k.key_hash = ${keyHash} AND k.status = 'active' AND m.status = 'active'`
    })

    /**
     * Inserts a new key; the caller shows the returned plain key once and forgets it. A key minted by a
     * console user remembers them: what it requests is theirs (they may not approve its withdrawals).
     */
    const issue = Effect.fn("ApiKeys.issue")(function* (
      merchantId: string,
      scopes: ReadonlyArray<string>,
      label: string,
      actor: AuditActor,
      mintedByUserId?: string
    ) {
      const key = newApiKey()
      const id = newId("key")
      yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`
          INSERT INTO api_keys (id, merchant_id, key_hash, key_prefix, scopes, label, created_by_user_id)
          VALUES (${id}, ${merchantId}, ${hashSecret(key)}, ${displayPrefix(key)},
                  string_to_array(${scopes.join(",")}, ','), ${label}, ${mintedByUserId ?? null})`
            yield* audit.record(
              merchantId,
              actor,
              "api_key.created",
              id,
              `"${label}" ${displayPrefix(key)}… scopes ${scopes.join(", ")}`
            )
          })
        )
      )
      return { id, key }
    })

    const authenticate = Effect.fn("ApiKeys.authenticate")(function* (key: Redacted.Redacted<string>) {
      const row = yield* Effect.orDie(findActive(hashSecret(key)))
      if (Option.isNone(row)) return Option.none<Principal>()
      // last use is for operators; a minute's resolution keeps it from being a write per request
      yield* Effect.orDie(sql`UPDATE api_keys SET last_used_at = now()
        WHERE id = ${row.value.id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`)
      return Option.some<Principal>({
        merchantId: row.value.merchant_id,
        apiKeyId: row.value.id,
        scopes: row.value.scopes,
        mintedByUserId: row.value.created_by_user_id
      })
    })

    /** A merchant's keys as its owner sees them: prefix, scopes, label, status, last use (never the key). */
    const list = Effect.fn("ApiKeys.list")(function* (merchantId: string) {
      return yield* Effect.orDie(sql<{
        id: string
        key_prefix: string
        scopes: ReadonlyArray<string>
        label: string
        status: string
        created_at: Date
        last_used_at: Date | null
      }>`
        SELECT id, key_prefix, scopes, label, status, created_at, last_used_at FROM api_keys WHERE merchant_id = ${merchantId} ORDER BY created_at DESC`)
    })

    /** Revokes one of the merchant's keys at once (another merchant's key: false, nothing changed). */
    const revoke = Effect.fn("ApiKeys.revoke")(function* (merchantId: string, keyId: string, actor: AuditActor) {
      return yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql<{ label: string; key_prefix: string }>`
          UPDATE api_keys SET status = 'revoked' WHERE id = ${keyId} AND merchant_id = ${merchantId} AND status = 'active' RETURNING label, key_prefix`
            const revoked = rows[0]
            if (revoked !== undefined)
              yield* audit.record(
                merchantId,
                actor,
                "api_key.revoked",
                keyId,
                `"${revoked.label}" ${revoked.key_prefix}…`
              )
            return revoked !== undefined
          })
        )
      )
    })

    /** A new webhook secret for the merchant, effective for the next delivery; shown once. */
    const rotateWebhookSecret = Effect.fn("ApiKeys.rotateWebhookSecret")(function* (
      merchantId: string,
      actor: AuditActor
    ) {
      const secret = newWebhookSecret()
      yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE merchants SET webhook_secret = ${box.seal(Redacted.value(secret))}, updated_at = now() WHERE id = ${merchantId}`
            yield* audit.record(merchantId, actor, "webhook_secret.rotated")
          })
        )
      )
      return secret
    })

    const hasActiveKey = Effect.fn("ApiKeys.hasActiveKey")(function* (merchantId: string) {
      const rows = yield* Effect.orDie(
        sql<{ n: string }>`SELECT count(*) AS n FROM api_keys WHERE merchant_id = ${merchantId} AND status = 'active'`
      )
      return Number(rows[0]?.n ?? 0) > 0
    })

    return { issue, authenticate, hasActiveKey, list, revoke, rotateWebhookSecret } as const
  })
}) {}
