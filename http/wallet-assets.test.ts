import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { ApiKeys } from "../src/merchants/api-keys.js"

const onboard = (projectName: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const res = yield* client.request("POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: projectName,
        business_type: "shop",
        use_case: "payments",
        agree_terms: true,
        contact_email: `${projectName.replace(/\W/g, "")}@x.example`
      }
    })
    return String(asRecord(asRecord(res.body).env).FACET_API_KEY)
  })

const policies = (apiKey: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const res = yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey })
    expect(res.status).toBe(200)
    const items = asRecord(res.body).items
    return Array.isArray(items) ? items.map(asRecord) : []
  })

describe("wallet asset policies and enrollment", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("lists the seeded catalogue with this merchant's enrollment, failing closed", () =>
      Effect.gen(function* () {
        const items = yield* policies(yield* onboard("Catalogue Co"))
        const byKey = new Map(items.map((p) => [String(p.asset_key), p]))
        expect([...byKey.keys()].sort()).toEqual([
          "BEP20-BNB",
          "BEP20-USDT",
          "BEP20-VELNX",
          "POLYGON-USDT",
          "SOLANA-SOL",
          "SOLANA-USDT",
          "TRC20-TRX",
          "TRC20-USDT"
        ])
        expect(byKey.get("TRC20-USDT")).toMatchObject({
          chain: "TRC20",
          currency: "USDT",
          status: "live",
          merchant_enabled: true,
          default_for_new_merchants: true,
          sweep_requires_gas: true,
          signing_implemented: true,
          decimals: 6,
          amount_precision: 6,
          gas_asset: "TRX",
          merchant_source: "default",
          actions: { deposit: true, checkout: true, collect: true, withdraw: true }
        })
        expect(byKey.get("TRC20-TRX")).toMatchObject({
          actions: { deposit: true, checkout: true, collect: false, withdraw: true }
        })
        expect(byKey.get("BEP20-USDT")).toMatchObject({ decimals: 18, amount_precision: 6 })
        expect(byKey.get("BEP20-VELNX")).toMatchObject({
          merchant_enabled: false,
          default_for_new_merchants: false,
          actions: { deposit: false, checkout: false, collect: false, withdraw: false }
        })
        expect(byKey.get("SOLANA-SOL")).toMatchObject({
          status: "deposit_live",
          merchant_enabled: true,
          actions: { deposit: true, checkout: false, collect: false, withdraw: false }
        })
        expect(byKey.get("POLYGON-USDT")).toMatchObject({ status: "disabled", merchant_enabled: false })
        for (const p of items) {
          for (const field of ["main_key_mode", "receive_key_mode", "collection_mode"])
            expect(typeof p[field]).toBe("string")
        }
      })
    )

    it.effect("enrolls a custom asset idempotently and keeps the first source", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const apiKey = yield* onboard("Enroll Co")
        const first = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          apiKey,
          json: { chain: "BEP20", currency: "VELNX" }
        })
        expect(first.status).toBe(200)
        expect(asRecord(first.body)).toMatchObject({
          asset_key: "BEP20-VELNX",
          merchant_enabled: true,
          merchant_source: "merchant_api",
          status: "live",
          actions: { deposit: true, checkout: true, collect: true, withdraw: true }
        })
        const again = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          apiKey,
          json: { chain: "BEP20", currency: "VELNX", source: "agent" }
        })
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        const listed = (yield* policies(apiKey)).find((p) => p.asset_key === "BEP20-VELNX")
        expect(listed?.merchant_enabled).toBe(true)
        // enrolling an already-enabled default asset is a no-op that answers the policy
        const dflt = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          apiKey,
          json: { chain: "TRC20", currency: "usdt" }
        })
        expect(dflt.status).toBe(200)
        expect(asRecord(dflt.body)).toMatchObject({ asset_key: "TRC20-USDT", merchant_source: "default" })
      })
    )

    it.effect("refuses unknown, sunset and malformed enrollments with 400", () =>
      Effect.gen(function* () {
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
      })
    )

    it.effect("requires a key on both endpoints", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        expect((yield* client.request("GET", "/v1/wallet-asset-policies")).status).toBe(401)
        const res = yield* client.request("POST", "/v1/wallet-asset-enrollments", {
          json: { chain: "BEP20", currency: "VELNX" }
        })
        expect(res.status).toBe(401)
        expect(asRecord(res.body).error).toMatch(/merchant authentication is required/)
      })
    )

    it.effect(
      "shows the portfolio from the ledger, fails closed on another quote, and marks the old endpoint deprecated",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const apiKey = yield* onboard("Portfolio Co")
          const res = yield* client.request("GET", "/v1/wallet-portfolio", { apiKey })
          expect(res.status, res.text).toBe(200)
          const body = asRecord(res.body)
          expect(body).toMatchObject({
            quote_currency: "USDT",
            price_source: "static:devnet",
            totals: {
              value_usdt: "0.000000",
              available_value_usdt: "0.000000",
              uncollected_value_usdt: "0.000000",
              locked_value_usdt: "0.000000",
              network_count: 3
            }
          })
          const assets = Array.isArray(body.assets) ? body.assets.map(asRecord) : []
          const usdt = assets.find((a) => a.currency === "USDT")
          const networks = Array.isArray(usdt?.networks) ? usdt.networks.map(asRecord) : []
          expect(networks.map((n) => n.network_asset_id).sort()).toEqual(["BEP20-USDT", "SOLANA-USDT", "TRC20-USDT"])
          const tron = networks.find((n) => n.chain === "TRC20")
          // no node answers in this file: the gas wallet's state is unknown, never guessed
          expect(tron).toMatchObject({
            gas_asset: "TRX",
            gas_status: "unknown",
            available_balance: "0",
            actions: { deposit: true, withdraw: true, collect: true }
          })
          expect(String(tron?.main_address)).toMatch(/^T/)
          expect(networks.find((n) => n.chain === "SOLANA")).toMatchObject({
            actions: { collect: false, withdraw: false }
          })

          const euro = yield* client.request("GET", "/v1/wallet-portfolio?quote=EUR", { apiKey })
          expect(euro.status).toBe(400)
          expect(String(asRecord(euro.body).error)).toMatch(/USDT/)

          const old = yield* client.request("GET", "/v1/wallet-assets", { apiKey })
          expect(old.status).toBe(200)
          expect(old.headers.get("deprecation")).toBe("true")
          expect(old.headers.get("link")).toContain("/v1/wallet-portfolio")
          expect(asRecord(old.body)).toMatchObject({ deprecated: true, successor: "/v1/wallet-portfolio" })
        })
    )

    it.effect("lists an asset's receive wallets, searchable by address; an unknown asset is 404", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const apiKey = yield* onboard("Detail Co")
        const created = asRecord(
          (yield* client.request("POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: "u1", chain: "BEP20", currency: "USDT" }
          })).body
        )
        const found = yield* client.request("GET", `/v1/wallet-assets/BEP20-USDT?q=${String(created.address)}`, {
          apiKey
        })
        expect(found.status, found.text).toBe(200)
        expect(asRecord(found.body)).toMatchObject({
          asset_key: "BEP20-USDT",
          total: 1,
          items: [{ wallet_id: created.wallet_id, uncollected_balance: "0", sweep_in_flight: null }]
        })
        // without q: only wallets that still hold something
        expect(asRecord((yield* client.request("GET", "/v1/wallet-assets/BEP20-USDT", { apiKey })).body).total).toBe(0)
        expect((yield* client.request("GET", "/v1/wallet-assets/BEP20-DOGE", { apiKey })).status).toBe(404)
        expect((yield* client.request("GET", "/v1/wallet-assets/BEP20-USDT?limit=0", { apiKey })).status).toBe(400)
      })
    )

    it.effect("withdrawals need their scopes; another merchant's withdrawal is not found", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const keys = yield* ApiKeys
        const { merchantId } = yield* onboardMerchant()
        const depositsOnly = Redacted.value(
          (yield* keys.issue(merchantId, ["deposits"], "deposits only", { kind: "operator", name: "test" })).key
        )
        const quote = yield* client.request("POST", "/v1/withdrawal-fee-quote", {
          apiKey: depositsOnly,
          json: { chain: "TRC20", currency: "USDT", amount: "1" }
        })
        expect(quote.status).toBe(403)
        expect(String(asRecord(quote.body).error)).toMatch(/read scope/)
        const create = yield* client.request("POST", "/v1/withdrawals", {
          apiKey: depositsOnly,
          json: { chain: "TRC20", currency: "USDT", amount: "1", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" }
        })
        expect(create.status).toBe(403)
        const apiKey = yield* onboard("Withdrawal Reader Co")
        expect((yield* client.request("GET", "/v1/withdrawals/wdr_someone_elses", { apiKey })).status).toBe(404)
        expect(asRecord((yield* client.request("GET", "/v1/withdrawals?status=PENDING", { apiKey })).body)).toEqual({
          total: 0,
          limit: 50,
          offset: 0,
          items: []
        })
        expect((yield* client.request("GET", "/v1/withdrawals?status=DONE", { apiKey })).status).toBe(400)
        const missing = yield* client.request("POST", "/v1/withdrawal-fee-quote", {
          apiKey,
          json: { chain: "TRC20", currency: "USDT" }
        })
        expect(missing.status).toBe(400)
      })
    )

    it.effect("refuses sweeps that cannot be: scope, asset, wallet, amount", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const keys = yield* ApiKeys
        const { apiKey, merchantId } = yield* onboardMerchant()
        const other = yield* onboard("Sweep Other Co")
        const mine = asRecord(
          (yield* client.request("POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: "u1", chain: "TRC20", currency: "USDT" }
          })).body
        )
        const theirs = asRecord(
          (yield* client.request("POST", "/v1/deposit-addresses", {
            apiKey: other,
            json: { external_user_id: "u1", chain: "TRC20", currency: "USDT" }
          })).body
        )
        const sweep = (json: unknown, key = apiKey, asset = "TRC20-USDT") =>
          client.request("POST", `/v1/wallet-assets/${asset}/sweep`, { apiKey: key, json })
        const cases: ReadonlyArray<[unknown, string, number, RegExp]> = [
          [{ from_wallet_id: mine.wallet_id }, "TRC20-USDT", 400, /nothing to sweep/],
          [{ from_wallet_id: mine.wallet_id, amount: "1.0000001" }, "TRC20-USDT", 400, /fractional digits/],
          [{ from_wallet_id: mine.wallet_id, amount: "5" }, "TRC20-USDT", 400, /more than the uncollected 0/],
          [{ from_wallet_id: theirs.wallet_id }, "TRC20-USDT", 404, /not found/],
          [{ from_wallet_id: mine.wallet_id }, "BEP20-USDT", 404, /not found/],
          [{ from_wallet_id: mine.wallet_id }, "TRC20-TRX", 400, /does not allow collection/],
          [{ from_wallet_id: mine.wallet_id }, "TRC20-DOGE", 404, /unknown asset/],
          [{ from_wallet_id: mine.wallet_id, fee: "1" }, "TRC20-USDT", 400, /fee/],
          [{}, "TRC20-USDT", 400, /from_wallet_id/]
        ]
        for (const [json, asset, status, message] of cases) {
          const res = yield* sweep(json, apiKey, asset)
          expect(res.status, `${asset} ${JSON.stringify(json)}: ${res.text}`).toBe(status)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
        const readOnly = yield* keys.issue(merchantId, ["read", "deposits"], "no wallet scope", {
          kind: "operator",
          name: "test"
        })
        const forbidden = yield* sweep({ from_wallet_id: mine.wallet_id }, Redacted.value(readOnly.key))
        expect(forbidden.status).toBe(403)
        expect(String(asRecord(forbidden.body).error)).toMatch(/wallet scope/)
      })
    )
  })
})
