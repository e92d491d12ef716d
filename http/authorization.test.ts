import { HttpApi } from "@effect/platform"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { shareResult } from "../test/faults/scenario-result.js"
import { FacetApi } from "./api.js"

const TEST_ACTOR = { kind: "operator", name: "test" } as const

/** Every authenticated endpoint, with a request that would succeed for its owner's full key. */
const matrix = (ids: { readonly order: string; readonly depositAddress: string; readonly paymentLink: string }) =>
  [
    { method: "GET", path: "/v1/wallet-asset-policies" },
    { method: "POST", path: "/v1/wallet-asset-enrollments", json: { chain: "TRC20", currency: "USDT" } },
    { method: "GET", path: "/v1/wallet-portfolio" },
    { method: "GET", path: "/v1/wallet-assets" },
    { method: "GET", path: "/v1/wallet-assets/TRC20-USDT" },
    {
      method: "POST",
      path: "/v1/wallet-assets/TRC20-USDT/sweep",
      json: { from_wallet_id: "wal_none" },
      scope: "wallet"
    },
    { method: "GET", path: "/v1/wallet-assets/TRC20-USDT/sweeps/op_none" },
    { method: "GET", path: "/v1/orders" },
    { method: "POST", path: "/v1/orders", json: { amount: "5", currency: "USDT", chain: "TRC20" }, scope: "orders" },
    { method: "GET", path: `/v1/orders/${ids.order}`, owned: true },
    { method: "GET", path: "/v1/transactions" },
    { method: "GET", path: "/v1/deposit-addresses" },
    {
      method: "POST",
      path: "/v1/deposit-addresses",
      json: { external_user_id: "u-9", chain: "TRC20", currency: "USDT" },
      scope: "deposits"
    },
    {
      method: "POST",
      path: "/v1/deposit-addresses/batch",
      json: { external_user_ids: ["u-10"], chain: "TRC20", currency: "USDT" },
      scope: "deposits"
    },
    { method: "GET", path: `/v1/deposit-addresses/${ids.depositAddress}/transactions`, owned: true },
    {
      method: "POST",
      path: "/v1/withdrawal-fee-quote",
      json: { chain: "TRC20", currency: "USDT", amount: "1" },
      scope: "read"
    },
    { method: "GET", path: "/v1/withdrawals" },
    {
      method: "POST",
      path: "/v1/withdrawals",
      json: { chain: "TRC20", currency: "USDT", amount: "1", to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" },
      scope: "withdrawals"
    },
    { method: "GET", path: "/v1/withdrawals/wdr_none" },
    { method: "GET", path: "/v1/withdrawal-addresses" },
    { method: "GET", path: "/v1/payment-links" },
    {
      method: "POST",
      path: "/v1/payment-links",
      json: { product_name: "Mug", amount: "5", currency: "USDT" },
      scope: "orders"
    },
    { method: "GET", path: `/v1/payment-links/${ids.paymentLink}`, owned: true },
    { method: "POST", path: `/v1/payment-links/${ids.paymentLink}/deactivate`, owned: true, scope: "orders" },
    { method: "GET", path: `/v1/payment-links/${ids.paymentLink}/orders`, owned: true },
    {
      method: "POST",
      path: "/v1/withdrawal-batches",
      json: {
        items: [
          {
            chain: "TRC20",
            currency: "USDT",
            amount: "1",
            to_address: "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy",
            out_withdrawal_no: "batch-item-1"
          }
        ]
      },
      scope: "withdrawals"
    },
    { method: "GET", path: "/v1/withdrawal-batches" },
    { method: "GET", path: "/v1/withdrawal-batches/wbt_none" },
    { method: "GET", path: "/v1/withdrawal-batches/wbt_none/items" },
    {
      method: "POST",
      path: `/v1/orders/${ids.order}/refunds`,
      json: { amount: "1" },
      scope: "withdrawals",
      owned: true
    },
    { method: "GET", path: `/v1/orders/${ids.order}/refunds`, owned: true },
    { method: "GET", path: "/v1/refunds" },
    { method: "GET", path: "/v1/refunds/rfd_none" },
    { method: "POST", path: "/v1/refunds/rfd_none/cancel", scope: "withdrawals" },
    { method: "POST", path: "/v1/refunds/rfd_none/claim-link", scope: "withdrawals" },
    { method: "GET", path: "/v1/ledger-export?from=2026-01-01&to=2026-02-01", scope: "read" },
    { method: "GET", path: "/v1/ai/onboarding-status/MERCHANT" }
  ] as const

describe("authorization matrix", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect(
      "every endpoint × (no key, bad key, revoked key, narrower scope, another merchant's key and ids): the contract's status, never another merchant's data",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const keys = yield* ApiKeys
          const a = yield* onboardMerchant()
          const b = yield* onboardMerchant()
          const order = asRecord(
            (yield* client.request("POST", "/v1/orders", {
              apiKey: a.apiKey,
              json: { amount: "7", currency: "USDT", chain: "TRC20", out_trade_no: "a-secret-ref" }
            })).body
          )
          const deposit = asRecord(
            (yield* client.request("POST", "/v1/deposit-addresses", {
              apiKey: a.apiKey,
              json: { external_user_id: "a-user", chain: "TRC20", currency: "USDT" }
            })).body
          )
          const link = asRecord(
            (yield* client.request("POST", "/v1/payment-links", {
              apiKey: a.apiKey,
              json: { product_name: "a-secret-product", amount: "9", currency: "USDT" }
            })).body
          )
          const revoked = yield* keys.issue(
            a.merchantId,
            ["read", "orders", "deposits", "wallet", "withdrawals"],
            "to revoke",
            TEST_ACTOR
          )
          yield* keys.revoke(a.merchantId, revoked.id, TEST_ACTOR)
          const narrow = Redacted.value((yield* keys.issue(a.merchantId, ["read"], "read only", TEST_ACTOR)).key)
          const none = Redacted.value((yield* keys.issue(a.merchantId, ["deposits"], "deposits only", TEST_ACTOR)).key)
          const rows = matrix({
            order: String(order.order_id),
            depositAddress: String(deposit.id),
            paymentLink: String(link.payment_link_id)
          })

          // the table covers every authenticated endpoint the API declares
          const declared: Array<string> = []
          HttpApi.reflect(FacetApi, {
            onGroup: () => undefined,
            onEndpoint: ({ endpoint, middleware }) => {
              if (middleware.size > 0) declared.push(`${endpoint.method} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
            }
          })
          const covered = rows.map(
            (r) =>
              `${r.method} ${r.path
                .replace(String(order.order_id), "{order_id}")
                .replace(String(deposit.id), "{deposit_address_id}")
                .replace(String(link.payment_link_id), "{payment_link_id}")
                .replace("/TRC20-USDT/sweeps/op_none", "/{asset_key}/sweeps/{operation_id}")
                .replace("/TRC20-USDT/sweep", "/{asset_key}/sweep")
                .replace("/wallet-assets/TRC20-USDT", "/wallet-assets/{asset_key}")
                .replace("wdr_none", "{withdrawal_id}")
                .replace("wbt_none", "{batch_id}")
                .replace("rfd_none", "{refund_id}")
                .replace("MERCHANT", "{merchant_id}")
                .replace(/\?.*$/, "")}`
          )
          expect(declared.filter((d) => !covered.includes(d))).toEqual([])

          const wrong: Array<string> = []
          let sent = 0
          const check = (
            label: string,
            row: (typeof rows)[number],
            apiKey: string | undefined,
            expected: ReadonlyArray<number>
          ) =>
            Effect.gen(function* () {
              const path = row.path.replace("MERCHANT", a.merchantId)
              const res = yield* client.request(row.method, path, {
                ...(apiKey === undefined ? {} : { apiKey }),
                ...("json" in row ? { json: row.json } : {})
              })
              sent += 1
              if (!expected.includes(res.status) || !res.text.startsWith(res.status < 400 ? "" : '{"error":'))
                wrong.push(`${label} ${row.method} ${path}: ${res.status} ${res.text.slice(0, 100)}`)
              return res
            })
          for (const row of rows) {
            yield* check("no key", row, undefined, [401])
            yield* check("bad key", row, "fk_live_not-a-key-at-all-000000000000000000000", [401])
            yield* check("revoked key", row, Redacted.value(revoked.key), [401])
            if ("scope" in row) yield* check(`lacking ${row.scope}`, row, row.scope === "read" ? none : narrow, [403])
            // another merchant: its own ids are not found, and nothing of A's shows in its answers
            const other = yield* check(
              "another merchant",
              row,
              b.apiKey,
              "owned" in row || row.path.includes("onboarding-status") ? [403, 404] : [200, 201, 400, 404, 409, 503]
            )
            // (an id it sent itself may be echoed in its 404)
            for (const secret of [
              String(order.order_id),
              String(deposit.id),
              String(deposit.address),
              "a-secret-ref",
              "a-user",
              String(link.payment_link_id),
              "a-secret-product"
            ]) {
              if (other.text.includes(secret) && !row.path.includes(secret))
                wrong.push(`another merchant saw ${secret} in ${row.method} ${row.path}`)
            }
          }
          shareResult({
            scenario: "hostile input: authorization matrix",
            faults: 0,
            faultDetail: `${rows.length} endpoints × no key, bad key, revoked key, narrower scope, another merchant`,
            restarts: 0,
            requestsFuzzed: sent,
            payments: 0,
            violations: wrong.map((detail) => ({
              invariant: "the contract's status, never another merchant's data",
              detail
            }))
          })
          expect(wrong).toEqual([])
        })
    )
  })
})
