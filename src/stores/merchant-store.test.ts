import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestDatabaseLive } from "../../test/database.js"
import { MerchantStore, type NewMerchant } from "./merchant-store.js"

const merchant = (id: string, webhookUrl: string | null): NewMerchant => ({
  id,
  applicationId: `app_${id}`,
  projectName: `Project ${id}`,
  projectKey: `project ${id}`,
  businessType: "b",
  useCase: "u",
  website: null,
  repositoryUrl: null,
  contactChannel: null,
  contactEmail: null,
  monthlyVolume: null,
  webhookUrl,
  returnUrl: null,
  preferredChains: ["TRC20"],
  aiProvider: null,
  integrationMode: "checkout",
  application: {},
  sealedWebhookSecret: "sealed"
})

describe("merchant store", () => {
  layer(Layer.provideMerge(MerchantStore.Default, TestDatabaseLive), { excludeTestServices: true })((it) => {
    it.effect("webhook destinations by batch and by the join fragment; keys resolved only while active", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = yield* MerchantStore
        yield* store.insertMerchant(merchant("m1", "https://one.example/hook"))
        yield* store.insertMerchant(merchant("m2", null))

        expect(yield* store.webhookUrls([])).toEqual(new Map())
        expect(yield* store.webhookUrls(["m1", "m2", "m1", "missing"])).toEqual(
          new Map([
            ["m1", "https://one.example/hook"],
            ["m2", null]
          ])
        )
        // the fragment as a caller composes it: its CTE's merchant_id joined, `<alias>.webhook_url` read
        const joined = yield* sql<{ merchant_id: string; webhook_url: string | null }>`
          WITH c AS (SELECT unnest(ARRAY['m1', 'm2', 'missing']) AS merchant_id)
          SELECT c.merchant_id, m.webhook_url FROM c ${store.webhookUrlJoin("c", "m")} ORDER BY c.merchant_id`
        expect(joined).toEqual([
          { merchant_id: "m1", webhook_url: "https://one.example/hook" },
          { merchant_id: "m2", webhook_url: null }
        ])

        const found = yield* store.findById("m1")
        expect(Option.map(found, (m) => [m.merchant_no.startsWith("M"), m.preferred_chains])).toEqual(
          Option.some([true, ["TRC20"]])
        )
        expect(yield* store.keyAccount("missing")).toEqual(Option.none())

        expect(yield* store.hasActiveKey("m1")).toBe(false)
        yield* store.insertKey({
          id: "key1",
          merchantId: "m1",
          keyHash: "hash1",
          keyPrefix: "fk_1",
          scopes: ["orders:read", "orders:write"],
          label: "test",
          createdByUserId: null
        })
        expect(yield* store.hasActiveKey("m1")).toBe(true)
        expect(Option.map(yield* store.findActiveKey("hash1"), (k) => k.scopes)).toEqual(
          Option.some(["orders:read", "orders:write"])
        )
        expect(yield* store.revokeKey("m2", "key1")).toEqual(Option.none())
        expect(yield* store.revokeKey("m1", "key1")).toEqual(Option.some({ label: "test", key_prefix: "fk_1" }))
        expect(yield* store.findActiveKey("hash1")).toEqual(Option.none())
        expect(yield* store.hasActiveKey("m1")).toBe(false)
      })
    )
  })
})
