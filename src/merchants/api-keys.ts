import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted } from "effect"
import { AuditLog, type AuditActor } from "../audit/audit-log.js"
import { newId } from "../ids.js"
import { SecretBox } from "../keys/secret-box.js"
import { MerchantStore } from "../stores/merchant-store.js"
import { displayPrefix, hashSecret, newApiKey, newWebhookSecret } from "./credentials.js"
import type { Principal } from "./principal.js"

const RECENT_KEYS = 10_000

/**
 * A merchant's credentials: API keys (issued once in plain text, stored as hashes, resolved to the
 * merchant they act for, revoked at once) and the webhook secret's rotation.
 */
export class ApiKeys extends Effect.Service<ApiKeys>()("facet/ApiKeys", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const audit = yield* AuditLog
    const box = yield* SecretBox
    const store = yield* MerchantStore

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
            yield* store.insertKey({
              id,
              merchantId,
              keyHash: hashSecret(key),
              keyPrefix: displayPrefix(key),
              scopes,
              label,
              createdByUserId: mintedByUserId ?? null
            })
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

    /**
     * Hashes of keys this process authenticated lately, oldest first (at most RECENT_KEYS): the rate limiter
     * gives those a bucket of their own; any other key counts against its caller's address, so made-up keys
     * cannot each open a fresh bucket.
     */
    const recent = new Set<string>()

    const authenticate = Effect.fn("ApiKeys.authenticate")(function* (key: Redacted.Redacted<string>) {
      const hash = hashSecret(key)
      const row = yield* Effect.orDie(store.findActiveKey(hash))
      recent.delete(hash)
      if (Option.isNone(row)) return Option.none<Principal>()
      recent.add(hash)
      if (recent.size > RECENT_KEYS)
        for (const oldest of recent) {
          recent.delete(oldest)
          break
        }
      // last use is for operators; a minute's resolution keeps it from being a write per request
      yield* Effect.orDie(store.touchKey(row.value.id))
      return Option.some<Principal>({
        merchantId: row.value.merchant_id,
        apiKeyId: row.value.id,
        scopes: row.value.scopes,
        mintedByUserId: row.value.created_by_user_id
      })
    })

    /** A merchant's keys as its owner sees them: prefix, scopes, label, status, last use (never the key). */
    const list = Effect.fn("ApiKeys.list")(function* (merchantId: string) {
      return yield* Effect.orDie(store.keysOf(merchantId))
    })

    /** Revokes one of the merchant's keys at once (another merchant's key: false, nothing changed). */
    const revoke = Effect.fn("ApiKeys.revoke")(function* (merchantId: string, keyId: string, actor: AuditActor) {
      return yield* Effect.orDie(
        sql.withTransaction(
          Effect.gen(function* () {
            const revoked = yield* store.revokeKey(merchantId, keyId)
            if (Option.isSome(revoked))
              yield* audit.record(
                merchantId,
                actor,
                "api_key.revoked",
                keyId,
                `"${revoked.value.label}" ${revoked.value.key_prefix}…`
              )
            return Option.isSome(revoked)
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
            yield* store.setWebhookSecret(merchantId, box.seal(Redacted.value(secret)))
            yield* audit.record(merchantId, actor, "webhook_secret.rotated")
          })
        )
      )
      return secret
    })

    const hasActiveKey = Effect.fn("ApiKeys.hasActiveKey")(function* (merchantId: string) {
      return yield* Effect.orDie(store.hasActiveKey(merchantId))
    })

    /** Whether this process authenticated the key of this hash lately (see `recent`). */
    const authenticatedLately = (hash: string) => recent.has(hash)

    return { issue, authenticate, authenticatedLately, hasActiveKey, list, revoke, rotateWebhookSecret } as const
  }),
  dependencies: [MerchantStore.Default, AuditLog.Default]
}) {}
