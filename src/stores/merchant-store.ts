import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { IntegrationMode } from "../domain/onboarding.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/** A merchant as the onboarding reads it back (its package and its live-readiness). */
const MerchantRow = Schema.Struct({
  id: Schema.String,
  merchant_no: Schema.String,
  application_id: Schema.String,
  project_name: Schema.String,
  website: Schema.NullOr(Schema.String),
  repository_url: Schema.NullOr(Schema.String),
  contact_email: Schema.NullOr(Schema.String),
  webhook_url: Schema.NullOr(Schema.String),
  integration_mode: IntegrationMode,
  preferred_chains: Schema.Array(Chain),
  status: Schema.String,
  console_bound_at: Schema.NullOr(Schema.DateFromSelf)
})
export type MerchantRow = typeof MerchantRow.Type

/** An active key of an active merchant: who it acts for, with what scopes, minted by whom. */
const ActiveKeyRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  created_by_user_id: Schema.NullOr(Schema.String)
})
export type ActiveKeyRow = typeof ActiveKeyRow.Type

/** A key as its owner sees it (never the key itself). */
const KeyListRow = Schema.Struct({
  id: Schema.String,
  key_prefix: Schema.String,
  scopes: Schema.Array(Schema.String),
  label: Schema.String,
  status: Schema.String,
  created_at: Schema.DateFromSelf,
  last_used_at: Schema.NullOr(Schema.DateFromSelf)
})
export type KeyListRow = typeof KeyListRow.Type

const RevokedRow = Schema.Struct({ label: Schema.String, key_prefix: Schema.String })
/** count(*) is a bigint: the driver gives its text. */
const CountRow = Schema.Struct({ n: Schema.NumberFromString })
const KeyAccountRow = Schema.Struct({ key_account: Schema.Number })
/** What an order needs of its merchant: the key account its receive wallets derive from, and the webhook. */
const OrderMerchantRow = Schema.Struct({ key_account: Schema.Number, webhook_url: Schema.NullOr(Schema.String) })
export type OrderMerchantRow = typeof OrderMerchantRow.Type
const WebhookUrlRow = Schema.Struct({ webhook_url: Schema.NullOr(Schema.String) })
const WebhookUrlByIdRow = Schema.Struct({ id: Schema.String, webhook_url: Schema.NullOr(Schema.String) })
const SecretRow = Schema.Struct({ id: Schema.String, secret: Schema.String })
const IdRow = Schema.Struct({ id: Schema.String })

/** A merchant as the onboarding creates it (the application's fields, its secret sealed already). */
export interface NewMerchant {
  readonly id: string
  readonly applicationId: string
  readonly projectName: string
  readonly projectKey: string
  readonly businessType: string
  readonly useCase: string
  readonly website: string | null
  readonly repositoryUrl: string | null
  readonly contactChannel: string | null
  readonly contactEmail: string | null
  readonly monthlyVolume: string | null
  readonly webhookUrl: string | null
  readonly returnUrl: string | null
  readonly preferredChains: ReadonlyArray<string>
  readonly aiProvider: string | null
  readonly integrationMode: string
  /** The application exactly as received, additional properties included. */
  readonly application: unknown
  readonly sealedWebhookSecret: string
}

/** A new API key: its hash and display prefix only (the key itself is shown once and never stored). */
export interface NewApiKey {
  readonly id: string
  readonly merchantId: string
  readonly keyHash: string
  readonly keyPrefix: string
  readonly scopes: ReadonlyArray<string>
  readonly label: string
  readonly createdByUserId: string | null
}

/**
 * Every statement on the merchants' tables: `merchants` (the onboarding's application, the key account
 * wallets derive from, the webhook destination and its sealed secret) and `api_keys` (stored as hashes).
 * A statement runs in the caller's transaction when it has one; `webhookUrls` and `webhookUrlJoin` serve the
 * indexer's block writes (one round trip, or none when composed into the caller's statement).
 */
export class MerchantStore extends Effect.Service<MerchantStore>()("facet/MerchantStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // ---- merchants

    const findByProjectKey = Effect.fn("MerchantStore.findByProjectKey")(function* (projectKey: string) {
      return yield* sql`SELECT * FROM merchants WHERE project_key = ${projectKey}`.pipe(
        Effect.flatMap(decodeFirst(MerchantRow))
      )
    })

    const findById = Effect.fn("MerchantStore.findById")(function* (id: string) {
      return yield* sql`SELECT * FROM merchants WHERE id = ${id}`.pipe(Effect.flatMap(decodeFirst(MerchantRow)))
    })

    /** A new merchant; its number comes from `merchant_no_seq`, its key account from its column's default. */
    const insertMerchant = Effect.fn("MerchantStore.insertMerchant")(function* (m: NewMerchant) {
      yield* sql`
            INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case,
              website, repository_url, contact_channel, contact_email, monthly_volume, webhook_url, return_url,
              preferred_chains, ai_provider, integration_mode, application, webhook_secret)
            VALUES (${m.id}, 'M' || nextval('merchant_no_seq'), ${m.applicationId}, ${m.projectName}, ${m.projectKey},
              ${m.businessType}, ${m.useCase}, ${m.website}, ${m.repositoryUrl},
              ${m.contactChannel}, ${m.contactEmail}, ${m.monthlyVolume},
              ${m.webhookUrl}, ${m.returnUrl},
              string_to_array(${m.preferredChains.join(",")}, ','), ${m.aiProvider},
              ${m.integrationMode}, ${JSON.stringify(m.application)}::jsonb, ${m.sealedWebhookSecret})`
    })

    /**
     * Whether the merchant exists, its row locked for the caller's transaction: what serializes a merchant's
     * console invites and policy changes (take it where they took it, before their other locks).
     */
    const lockMerchant = Effect.fn("MerchantStore.lockMerchant")(function* (merchantId: string) {
      return yield* sql`SELECT id FROM merchants WHERE id = ${merchantId} FOR UPDATE`.pipe(
        Effect.flatMap(decodeFirst(IdRow)),
        Effect.map(Option.isSome)
      )
    })

    /** The owner has claimed the console (through the onboarding's setup link). */
    const markConsoleBound = Effect.fn("MerchantStore.markConsoleBound")(function* (merchantId: string) {
      yield* sql`UPDATE merchants SET console_bound_at = now(), updated_at = now() WHERE id = ${merchantId}`
    })

    /** The key account the merchant's wallets derive from. */
    const keyAccount = Effect.fn("MerchantStore.keyAccount")(function* (merchantId: string) {
      return yield* sql`SELECT key_account FROM merchants WHERE id = ${merchantId}`.pipe(
        Effect.flatMap(decodeFirst(KeyAccountRow)),
        Effect.map(Option.map((row) => row.key_account))
      )
    })

    /** What an order needs of its merchant: key account and webhook destination. */
    const orderMerchant = Effect.fn("MerchantStore.orderMerchant")(function* (merchantId: string) {
      return yield* sql`SELECT key_account, webhook_url FROM merchants WHERE id = ${merchantId}`.pipe(
        Effect.flatMap(decodeFirst(OrderMerchantRow))
      )
    })

    /** The merchant's webhook destination (none set: `Some(null)`; no such merchant: `None`). */
    const webhookUrl = Effect.fn("MerchantStore.webhookUrl")(function* (merchantId: string) {
      return yield* sql`SELECT webhook_url FROM merchants WHERE id = ${merchantId}`.pipe(
        Effect.flatMap(decodeFirst(WebhookUrlRow)),
        Effect.map(Option.map((row) => row.webhook_url))
      )
    })

    /**
     * The webhook destinations of a batch of merchants, by id (one statement; none for no ids). On the
     * indexer's path: a plain function, no span.
     */
    const webhookUrls = (merchantIds: Iterable<string>) => {
      const ids = [...new Set(merchantIds)]
      return ids.length === 0
        ? Effect.succeed<ReadonlyMap<string, string | null>>(new Map())
        : sql`SELECT id, webhook_url FROM merchants WHERE ${sql.in("id", ids)}`.pipe(
            Effect.flatMap(decodeAll(WebhookUrlByIdRow)),
            Effect.map((rows): ReadonlyMap<string, string | null> => new Map(rows.map((r) => [r.id, r.webhook_url])))
          )
    }

    /**
     * Fragment: `JOIN merchants <alias> ON <alias>.id = <source>.merchant_id`, for a statement of another
     * family (e.g. the deposit webhooks written from the attribution's CTE) that reads `<alias>.webhook_url`.
     */
    const webhookUrlJoin = (source: string, alias: string) =>
      sql`JOIN merchants ${sql(alias)} ON ${sql(alias)}.id = ${sql(source)}.merchant_id`

    /** A new sealed webhook secret, effective for the next delivery. */
    const setWebhookSecret = Effect.fn("MerchantStore.setWebhookSecret")(function* (
      merchantId: string,
      sealedSecret: string
    ) {
      yield* sql`UPDATE merchants SET webhook_secret = ${sealedSecret}, updated_at = now() WHERE id = ${merchantId}`
    })

    /** The webhook secrets whose stored value is not like `pattern` (not sealed under the current key). */
    const webhookSecretsNotLike = Effect.fn("MerchantStore.webhookSecretsNotLike")(function* (pattern: string) {
      return yield* sql`SELECT id, webhook_secret AS secret FROM merchants WHERE webhook_secret NOT LIKE ${pattern}`.pipe(
        Effect.flatMap(decodeAll(SecretRow))
      )
    })

    /** Replaces a merchant's stored webhook secret (resealed), if it is still the one read. */
    const replaceWebhookSecret = Effect.fn("MerchantStore.replaceWebhookSecret")(function* (
      merchantId: string,
      previous: string,
      next: string
    ) {
      yield* sql`UPDATE merchants SET webhook_secret = ${next} WHERE id = ${merchantId} AND webhook_secret = ${previous}`
    })

    // ---- API keys

    const insertKey = Effect.fn("MerchantStore.insertKey")(function* (key: NewApiKey) {
      yield* sql`
          INSERT INTO api_keys (id, merchant_id, key_hash, key_prefix, scopes, label, created_by_user_id)
          VALUES (${key.id}, ${key.merchantId}, ${key.keyHash}, ${key.keyPrefix},
                  string_to_array(${key.scopes.join(",")}, ','), ${key.label}, ${key.createdByUserId})`
    })

    /** The active key of a hash, if its merchant is active too. */
    const findActiveKey = Effect.fn("MerchantStore.findActiveKey")(function* (keyHash: string) {
      return yield* sql`SELECT k.id, k.merchant_id, k.scopes, k.created_by_user_id
            FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
            WHERE k.key_hash = ${keyHash} AND k.status = 'active' AND m.status = 'active'`.pipe(
        Effect.flatMap(decodeFirst(ActiveKeyRow))
      )
    })

    /** A key's last use, at a minute's resolution (so it is not a write per request). */
    const touchKey = Effect.fn("MerchantStore.touchKey")(function* (keyId: string) {
      yield* sql`UPDATE api_keys SET last_used_at = now()
        WHERE id = ${keyId} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`
    })

    /** The merchant's keys, newest first. */
    const keysOf = Effect.fn("MerchantStore.keysOf")(function* (merchantId: string) {
      return yield* sql`
        SELECT id, key_prefix, scopes, label, status, created_at, last_used_at FROM api_keys WHERE merchant_id = ${merchantId} ORDER BY created_at DESC`.pipe(
        Effect.flatMap(decodeAll(KeyListRow))
      )
    })

    /** Revokes one of the merchant's active keys: its label and prefix, or none when there was no such key. */
    const revokeKey = Effect.fn("MerchantStore.revokeKey")(function* (merchantId: string, keyId: string) {
      return yield* sql`
          UPDATE api_keys SET status = 'revoked' WHERE id = ${keyId} AND merchant_id = ${merchantId} AND status = 'active' RETURNING label, key_prefix`.pipe(
        Effect.flatMap(decodeFirst(RevokedRow))
      )
    })

    const hasActiveKey = Effect.fn("MerchantStore.hasActiveKey")(function* (merchantId: string) {
      const active =
        yield* sql`SELECT count(*) AS n FROM api_keys WHERE merchant_id = ${merchantId} AND status = 'active'`.pipe(
          Effect.flatMap(decodeScalar(CountRow, "n", () => 0))
        )
      return active > 0
    })

    return {
      findByProjectKey,
      findById,
      insertMerchant,
      lockMerchant,
      markConsoleBound,
      keyAccount,
      orderMerchant,
      webhookUrl,
      webhookUrls,
      webhookUrlJoin,
      setWebhookSecret,
      webhookSecretsNotLike,
      replaceWebhookSecret,
      insertKey,
      findActiveKey,
      touchKey,
      keysOf,
      revokeKey,
      hasActiveKey
    } as const
  })
}) {}
