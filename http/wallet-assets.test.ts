import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"

const onboard = (projectName: string) =>
  Effect.gen(function*() {
    const client = yield* TestClient
    const res = yield* client.request("POST", "/v1/ai/merchant-apply", {
      json: { project_name: projectName, business_type: "shop", use_case: "payments", agree_terms: true, contact_email: `${projectName.replace(/\W/g, "")}@x.example` }
    })
    return String(asRecord(asRecord(res.body).env).FACET_API_KEY)
  })

const policies = (apiKey: string) =>
  Effect.gen(function*() {
    const client = yield* TestClient
    const res = yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey })
    expect(res.status).toBe(200)
    const items = asRecord(res.body).items
    return Array.isArray(items) ? items.map(asRecord) : []
  })

describe("wallet asset policies and enrollment", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("lists the seeded catalogue with this merchant's enrollment, failing closed", () =>
      Effect.gen(function*() {
        const items = yield* policies(yield* onboard("Catalogue Co"))
        const byKey = new Map(items.map((p) => [String(p.asset_key), p]))
        expect([...byKey.keys()].sort()).toEqual([
          "BEP20-BNB", "BEP20-USDT", "BEP20-VELNX", "POLYGON-USDT", "SOLANA-SOL", "SOLANA-USDT", "TRC20-TRX", "TRC20-USDT"
        ])
        expect(byKey.get("TRC20-USDT")).toMatchObject({
          chain: "TRC20", currency: "USDT", status: "live", merchant_enabled: true, default_for_new_merchants: true,
          sweep_requires_gas: true, signing_implemented: true, decimals: 6, amount_precision: 6, gas_asset: "TRX",
          merchant_source: "default", actions: { deposit: true, checkout: true, collect: true, withdraw: true }
        })
        expect(byKey.get("TRC20-TRX")).toMatchObject({ actions: { deposit: true, checkout: true, collect: false, withdraw: true } })
        expect(byKey.get("BEP20-USDT")).toMatchObject({ decimals: 18, amount_precision: 6 })
        expect(byKey.get("BEP20-VELNX")).toMatchObject({
          merchant_enabled: false, default_for_new_merchants: false,
          actions: { deposit: false, checkout: false, collect: false, withdraw: false }
        })
        expect(byKey.get("SOLANA-SOL")).toMatchObject({
          status: "deposit_live", merchant_enabled: true, actions: { deposit: true, checkout: false, collect: false, withdraw: false }
        })
        expect(byKey.get("POLYGON-USDT")).toMatchObject({ status: "disabled", merchant_enabled: false })
        for (const p of items) {
          for (const field of ["main_key_mode", "receive_key_mode", "collection_mode"]) expect(typeof p[field]).toBe("string")
        }
      }))

    it.effect("enrolls a custom asset idempotently and keeps the first source", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const apiKey = yield* onboard("Enroll Co")
        const first = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          apiKey, json: { chain: "BEP20", currency: "VELNX" }
        })
        expect(first.status).toBe(200)
        expect(asRecord(first.body)).toMatchObject({
          asset_key: "BEP20-VELNX", merchant_enabled: true, merchant_source: "merchant_api", status: "live",
          actions: { deposit: true, checkout: true, collect: true, withdraw: true }
        })
        const again = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          apiKey, json: { chain: "BEP20", currency: "VELNX", source: "agent" }
        })
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        const listed = (yield* policies(apiKey)).find((p) => p.asset_key === "BEP20-VELNX")
        expect(listed?.merchant_enabled).toBe(true)
        // enrolling an already-enabled default asset is a no-op that answers the policy
        const dflt = yield* client.request("POST", "/v1/wallet-asset-enrollments", { apiKey, json: { chain: "TRC20", currency: "usdt" } })
        expect(dflt.status).toBe(200)
        expect(asRecord(dflt.body)).toMatchObject({ asset_key: "TRC20-USDT", merchant_source: "default" })
      }))

    it.effect("refuses unknown, sunset and malformed enrollments with 400", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        const apiKey = yield* onboard("Refuse Co")
        const cases: ReadonlyArray<[unknown, RegExp]> = [
          [{ chain: "BEP20", currency: "DOGE" }, /unknown asset BEP20-DOGE/],
          [{ chain: "POLYGON", currency: "USDT" }, /sunset/],
          [{ chain: "ETH", currency: "USDT" }, /chain/],
          [{ chain: "BEP20" }, /currency/],
          [{ chain: "BEP20", currency: "VELNX", note: "extra" }, /note/],
          [{ chain: "BEP20", currency: "" }, /currency/]
        ]
        for (const [json, message] of cases) {
          const res = yield* client.request("POST", "/v1/wallet-asset-enrollments", { apiKey, json })
          expect(res.status, JSON.stringify(json)).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
        // nothing was enabled by the refused calls
        const velnx = (yield* policies(apiKey)).find((p) => p.asset_key === "BEP20-VELNX")
        expect(velnx?.merchant_enabled).toBe(false)
      }))

    it.effect("requires a key on both endpoints", () =>
      Effect.gen(function*() {
        const client = yield* TestClient
        expect((yield* client.request("GET", "/v1/wallet-asset-policies")).status).toBe(401)
        const res = yield* client.request("POST", "/v1/wallet-asset-enrollments", { json: { chain: "BEP20", currency: "VELNX" } })
        expect(res.status).toBe(401)
        expect(asRecord(res.body).error).toMatch(/merchant authentication is required/)
      }))
  })
})
