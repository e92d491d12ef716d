import { Effect, Option } from "effect"
import { type AssetPolicy, assetActions } from "../domain/asset-policy.js"
import { assetKey, type Chain } from "../domain/chain.js"
import { normalizeDecimal } from "../money.js"
import { AssetNotEnrollable, UnknownAsset } from "./asset-errors.js"
import { AssetStore, type MerchantAssetRow } from "../stores/asset-store.js"

const toPolicy = (row: MerchantAssetRow): AssetPolicy => ({
  asset_key: assetKey(row),
  chain: row.chain,
  currency: row.currency,
  display_name: row.display_name,
  main_key_mode: row.main_key_mode,
  receive_key_mode: row.receive_key_mode,
  collection_mode: row.collection_mode,
  sweep_requires_gas: row.sweep_requires_gas,
  signing_implemented: row.signing_implemented,
  status: row.status,
  default_for_new_merchants: row.default_for_new_merchants,
  merchant_enabled: row.merchant_enabled,
  ...(row.merchant_source === null ? {} : { merchant_source: row.merchant_source }),
  decimals: row.decimals,
  amount_precision: row.amount_precision,
  gas_asset: row.gas_asset,
  actions: assetActions(row, row.merchant_enabled),
  metadata: row.metadata,
  ...(row.underpayment_tolerance_percent === null && row.underpayment_tolerance_amount === null
    ? {}
    : {
        underpayment_tolerance: {
          ...(row.underpayment_tolerance_percent === null
            ? {}
            : { percent: normalizeDecimal(row.underpayment_tolerance_percent) }),
          ...(row.underpayment_tolerance_amount === null
            ? {}
            : { amount: normalizeDecimal(row.underpayment_tolerance_amount) })
        }
      })
})

/**
 * The platform asset catalogue (`wallet_asset_policies`) and each merchant's enrollment in it.
 * Fail closed: an asset is usable by a merchant only when its policy allows it and the merchant enabled it.
 */
export class AssetCatalog extends Effect.Service<AssetCatalog>()("facet/AssetCatalog", {
  effect: Effect.gen(function* () {
    const store = yield* AssetStore

    const policies = Effect.fn("AssetCatalog.policies")(function* (merchantId: string) {
      const rows = yield* Effect.orDie(store.listForMerchant(merchantId))
      return rows.map(toPolicy)
    })

    const policy = Effect.fn("AssetCatalog.policy")(function* (merchantId: string, chain: Chain, currency: string) {
      const rows = yield* policies(merchantId)
      return Option.fromNullable(rows.find((p) => p.chain === chain && p.currency === currency))
    })

    /** Enables every `default_for_new_merchants` asset; part of the onboarding transaction. */
    const enableDefaults = Effect.fn("AssetCatalog.enableDefaults")(function* (merchantId: string) {
      yield* Effect.orDie(store.enableDefaults(merchantId))
    })

    /** POST /v1/wallet-asset-enrollments: idempotent; the first enrollment's source is kept. */
    const enroll = Effect.fn("AssetCatalog.enroll")(function* (
      merchantId: string,
      request: { readonly chain: Chain; readonly currency: string; readonly source: string }
    ) {
      const currency = request.currency.trim().toUpperCase()
      const key = `${request.chain}-${currency}`
      const row = yield* Effect.orDie(store.findPolicy(request.chain, currency))
      if (Option.isNone(row)) {
        return yield* new UnknownAsset({ assetKey: key })
      }
      switch (row.value.status) {
        case "disabled":
        case "planned":
          return yield* new AssetNotEnrollable({ assetKey: key, status: row.value.status })
      }
      yield* Effect.orDie(store.enroll(merchantId, request.chain, currency, request.source))
      const enabled = yield* policy(merchantId, request.chain, currency)
      return yield* Option.match(enabled, {
        onNone: () => Effect.die(new Error(`asset ${key} vanished during enrollment`)),
        onSome: Effect.succeed
      })
    })

    return { policies, policy, enableDefaults, enroll } as const
  }),
  dependencies: [AssetStore.Default]
}) {}
