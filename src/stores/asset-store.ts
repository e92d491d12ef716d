import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { AssetPolicyRow } from "../domain/asset-policy.js"
import { decodeAll, decodeFirst } from "./rows.js"

/** A catalogue row with one merchant's enrollment in it (not enrolled: disabled, no source). */
const MerchantAssetRow = Schema.Struct({
  ...AssetPolicyRow.fields,
  merchant_enabled: Schema.Boolean,
  merchant_source: Schema.NullOr(Schema.String),
  /** The merchant's underpayment tolerance for the asset (migration 0033): each limit, or null when not set. */
  underpayment_tolerance_percent: Schema.NullOr(Schema.String),
  underpayment_tolerance_amount: Schema.NullOr(Schema.String)
})
export type MerchantAssetRow = typeof MerchantAssetRow.Type

/** An asset of a chain with its decimals (amounts in base units are scaled by them). */
const AssetDecimalsRow = Schema.Struct({ currency: Schema.String, decimals: Schema.Number })
export type AssetDecimalsRow = typeof AssetDecimalsRow.Type

const DecimalsRow = Schema.Struct({ decimals: Schema.Number })
const LimitRow = Schema.Struct({ limit: Schema.NullOr(Schema.String) })

/**
 * Every statement on the asset catalogue: `wallet_asset_policies` (the platform's assets and what each may
 * do) and `merchant_assets` (each merchant's enrollment in them, with its auto-approval limit). Other
 * owners' statements that join the catalogue compose the fragments marked so (one statement, no round trip more).
 */
export class AssetStore extends Effect.Service<AssetStore>()("facet/AssetStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The whole catalogue with the merchant's enrollment in each asset. */
    const listForMerchant = Effect.fn("AssetStore.listForMerchant")(function* (merchantId: string) {
      return yield* sql`SELECT p.*, coalesce(m.enabled, false) AS merchant_enabled, m.source AS merchant_source,
                   m.underpayment_tolerance_percent::text AS underpayment_tolerance_percent,
                   m.underpayment_tolerance_amount::text AS underpayment_tolerance_amount
            FROM wallet_asset_policies p
            LEFT JOIN merchant_assets m
              ON m.chain = p.chain AND m.currency = p.currency AND m.merchant_id = ${merchantId}
            ORDER BY p.chain, p.currency`.pipe(Effect.flatMap(decodeAll(MerchantAssetRow)))
    })

    const findPolicy = (chain: string, currency: string) =>
      sql`SELECT * FROM wallet_asset_policies WHERE chain = ${chain} AND currency = ${currency}`.pipe(
        Effect.flatMap(decodeFirst(AssetPolicyRow))
      )

    /** Every asset of a chain with its decimals (the indexer and a rescan scale amounts by them). */
    const decimalsOf = (chain: string) =>
      sql`
      SELECT currency, decimals FROM wallet_asset_policies WHERE chain = ${chain}`.pipe(
        Effect.flatMap(decodeAll(AssetDecimalsRow))
      )

    /** One asset's decimals. */
    const decimals = (chain: string, currency: string) =>
      sql`
          SELECT decimals FROM wallet_asset_policies WHERE chain = ${chain} AND currency = ${currency}`.pipe(
        Effect.flatMap(decodeFirst(DecimalsRow)),
        Effect.map(Option.map((row) => row.decimals))
      )

    /** The assets of a chain that take deposits now, by currency (what a reconciliation compares). */
    const depositAssets = (chain: string) =>
      sql`
        SELECT currency, decimals FROM wallet_asset_policies
        WHERE chain = ${chain} AND can_deposit AND status IN ('live', 'deposit_live') ORDER BY currency`.pipe(
        Effect.flatMap(decodeAll(AssetDecimalsRow))
      )

    /** Enables every `default_for_new_merchants` asset that is live (the onboarding's transaction). */
    const enableDefaults = (merchantId: string) =>
      sql`
        INSERT INTO merchant_assets (merchant_id, chain, currency, enabled, source)
        SELECT ${merchantId}, chain, currency, true, 'default'
        FROM wallet_asset_policies
        WHERE default_for_new_merchants AND status IN ('live', 'deposit_live')
        ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

    /** Enables an asset for a merchant; the first enrollment's source and time are kept while it stays enabled. */
    const enroll = (merchantId: string, chain: string, currency: string, source: string) =>
      sql`
        INSERT INTO merchant_assets (merchant_id, chain, currency, enabled, source)
        VALUES (${merchantId}, ${chain}, ${currency}, true, ${source})
        ON CONFLICT (merchant_id, chain, currency) DO UPDATE
          SET enabled = true,
              source = CASE WHEN merchant_assets.enabled THEN merchant_assets.source ELSE excluded.source END,
              enabled_at = CASE WHEN merchant_assets.enabled THEN merchant_assets.enabled_at ELSE now() END`.pipe(
        Effect.asVoid
      )

    /**
     * The merchant's daily auto-approval limit for an asset (none when not enrolled or switched off), its row
     * locked FOR UPDATE until the caller's transaction ends: concurrent withdrawals count each other.
     */
    const lockAutoApprovalLimit = (merchantId: string, chain: string, currency: string) =>
      sql`
          SELECT auto_approve_daily_limit::text AS limit FROM merchant_assets
          WHERE merchant_id = ${merchantId} AND chain = ${chain} AND currency = ${currency} FOR UPDATE`.pipe(
        Effect.flatMap(decodeFirst(LimitRow)),
        Effect.map(Option.flatMap((row) => Option.fromNullable(row.limit)))
      )

    /** Sets (none: switches off) the daily auto-approval limit; false when the merchant has no such asset enrolled. */
    const setAutoApprovalLimit = (merchantId: string, chain: string, currency: string, limit: Option.Option<string>) =>
      Effect.map(
        sql`
        UPDATE merchant_assets SET auto_approve_daily_limit = ${Option.getOrNull(limit)}
        WHERE merchant_id = ${merchantId} AND chain = ${chain} AND currency = ${currency} RETURNING merchant_id`,
        (updated) => updated.length > 0
      )

    /** Sets a merchant's underpayment tolerance for an asset it enrolled (each limit null: not set); false when none. */
    const setUnderpaymentTolerance = (
      merchantId: string,
      chain: string,
      currency: string,
      setting: { readonly percent: string | null; readonly amount: string | null }
    ) =>
      Effect.map(
        sql`
        UPDATE merchant_assets SET underpayment_tolerance_percent = ${setting.percent},
                                   underpayment_tolerance_amount = ${setting.amount}
        WHERE merchant_id = ${merchantId} AND chain = ${chain} AND currency = ${currency} RETURNING merchant_id`,
        (updated) => updated.length > 0
      )

    return {
      listForMerchant,
      setUnderpaymentTolerance,
      findPolicy,
      decimalsOf,
      decimals,
      depositAssets,
      enableDefaults,
      enroll,
      lockAutoApprovalLimit,
      setAutoApprovalLimit
    } as const
  })
}) {}
