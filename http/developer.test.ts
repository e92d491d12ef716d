import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"

describe("developer endpoints", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("serves an OpenAPI 3.1 document generated from the API, without a key", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* client.request("GET", "/v1/openapi.json")
        expect(res.status).toBe(200)
        const doc = asRecord(res.body)
        expect(doc.openapi).toBe("3.1.0")
        expect(asRecord(doc.info).version).toBe("2026-11-29")
        const schemes = asRecord(asRecord(doc.components).securitySchemes)
        expect(asRecord(schemes.apiKey)).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" })
        const paths = asRecord(doc.paths)
        expect(Object.keys(paths)).toEqual(
          expect.arrayContaining([
            "/v1/ai/merchant-apply",
            "/v1/ai/onboarding-status/{merchant_id}",
            "/v1/wallet-asset-policies",
            "/v1/wallet-asset-enrollments",
            "/v1/wallet-portfolio",
            "/v1/wallet-assets",
            "/v1/wallet-assets/{asset_key}",
            "/v1/wallet-assets/{asset_key}/sweep",
            "/v1/wallet-assets/{asset_key}/sweeps/{operation_id}",
            "/v1/withdrawal-addresses",
            "/v1/withdrawal-fee-quote",
            "/v1/withdrawals",
            "/v1/withdrawals/{withdrawal_id}",
            "/v1/orders/{order_id}/refunds",
            "/v1/refunds",
            "/v1/refunds/{refund_id}",
            "/v1/refunds/{refund_id}/cancel",
            "/v1/refunds/{refund_id}/claim-link"
          ])
        )
        // the pages for people (checkout, console) are not part of the /v1 contract
        expect(
          Object.keys(paths).filter(
            (p) => p.startsWith("/checkout") || p.startsWith("/console") || p.startsWith("/refund-claims")
          )
        ).toEqual([])
        expect(asRecord(asRecord(paths["/v1/wallet-assets"]).get).deprecated).toBe(true)
        const create = asRecord(asRecord(paths["/v1/withdrawals"]).post)
        expect(Object.keys(asRecord(create.responses))).toEqual(
          expect.arrayContaining(["201", "400", "401", "403", "409"])
        )
        // the withdrawal policy: its 403s, the address book, and the approvals on a withdrawal
        expect(String(create.description)).toContain("address book")
        expect(String(create.description)).toContain("rolling 24 h limit")
        const schemas = asRecord(asRecord(doc.components).schemas)
        expect(Object.keys(asRecord(asRecord(schemas.Withdrawal).properties))).toEqual(
          expect.arrayContaining(["approvals", "required_approvals"])
        )
        // the fee quote: an optional destination in, whether the figures are exact or an upper bound out
        const quoteRequest = asRecord(schemas.WithdrawalFeeQuoteRequest)
        expect(Object.keys(asRecord(quoteRequest.properties))).toEqual(
          expect.arrayContaining(["chain", "currency", "amount", "to_address"])
        )
        expect(quoteRequest.required).not.toContain("to_address")
        const feeQuote = asRecord(schemas.WithdrawalFeeQuote)
        expect(Object.keys(asRecord(feeQuote.properties))).toEqual(
          expect.arrayContaining(["network_fee", "net_amount", "policy_version", "fee_kind", "to_address"])
        )
        expect(feeQuote.required).toContain("fee_kind")
        expect(Object.keys(asRecord(asRecord(schemas.WithdrawalAddressList).properties))).toEqual(
          expect.arrayContaining(["address_book", "cooling_off_seconds", "items"])
        )
        // every documented error is {error: string}; the framework's own decode error is not what we send
        expect(res.text).not.toContain("HttpApiDecodeError")
        const policies = asRecord(asRecord(paths["/v1/wallet-asset-policies"]).get)
        expect(Object.keys(asRecord(policies.responses))).toEqual(
          expect.arrayContaining(["200", "400", "401", "429", "503"])
        )
        // the webhooks, from the receiver's schemas: every body event of order.updated, reorg outcomes included
        const hooks = asRecord(doc.webhooks)
        expect(Object.keys(hooks).sort()).toEqual([
          "order.updated",
          "refund.updated",
          "wallet.deposit.confirmed",
          "wallet.withdrawal.completed",
          "wallet.withdrawal.failed"
        ])
        const orderBody = JSON.stringify(asRecord(asRecord(hooks["order.updated"]).post).requestBody)
        for (const event of [
          "payment.detected",
          "payment.confirmed",
          "payment.reversed",
          "payment.restored",
          "order.expired",
          "order.partially_paid"
        ]) {
          expect(orderBody).toContain(event)
        }
        for (const ref of res.text.match(/#\/components\/schemas\/\w+/g) ?? []) {
          expect(Object.keys(asRecord(asRecord(doc.components).schemas))).toContain(ref.split("/").pop())
        }
      })
    )

    it.effect("answers HEAD on the contract endpoints and 405 {error} on other methods", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        for (const path of ["/v1/openapi.json", "/v1/api-changelog"]) {
          const head = yield* client.request("HEAD", path)
          expect(head.status).toBe(200)
          expect(head.text).toBe("")
          for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
            const res = yield* client.request(method, path, { json: {} })
            expect(res.status).toBe(405)
            expect(asRecord(res.body).error).toMatch(/not allowed/)
          }
        }
      })
    )

    it.effect("lists the change history newest first with the current version", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* client.request("GET", "/v1/api-changelog")
        expect(res.status).toBe(200)
        const body = asRecord(res.body)
        expect(body.current_version).toBe("2026-11-29")
        const entries = Array.isArray(body.entries) ? body.entries.map(asRecord) : []
        expect(entries.map((e) => e.version)).toEqual([
          "2026-11-29",
          "2026-11-26",
          "2026-08-02",
          "2026-07-22",
          "2026-07-21",
          "2026-07-20",
          "2026-07-19.2",
          "2026-07-18"
        ])
        expect(entries.every((e) => e.breaking === false)).toBe(true)
        expect(entries[0]).toMatchObject({ date: "2026-11-29", type: "fix" })
        expect(entries[1]).toMatchObject({ date: "2026-11-26", type: "feature" })
        expect(entries[2]).toMatchObject({ date: "2026-08-02", type: "feature" })
      })
    )

    it.effect("guides AI agents in /llms.txt and redirects the well-known contract URL", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const llms = yield* client.request("GET", "/llms.txt")
        expect(llms.status).toBe(200)
        expect(llms.headers.get("content-type")).toMatch(/^text\/plain/)
        for (const needle of [
          "merchant-apply",
          "/v1/openapi.json",
          "backend secrets",
          "human owner",
          "raw request body",
          "same X-Service-Idempotency-Key",
          "/v1/withdrawal-addresses",
          "required_approvals",
          "order.paid (once per order"
        ]) {
          expect(llms.text).toContain(needle)
        }
        const wellKnown = yield* client.request("GET", "/.well-known/openapi.json")
        expect(wellKnown.status).toBe(308)
        expect(wellKnown.headers.get("location")).toBe("/v1/openapi.json")
      })
    )

    it.effect("answers unknown routes with 404 {error}", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* client.request("GET", "/v1/nothing-here")
        expect(res.status).toBe(404)
        expect(asRecord(res.body).error).toMatch(/no such endpoint/)
      })
    )

    it.effect("reports readiness on /health", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* client.request("GET", "/health")
        expect(res.status).toBe(200)
        expect(res.body).toMatchObject({
          status: "ok",
          checks: { database: "ok", migrations: "ok" },
          indexers: [],
          reasons: []
        })
        // traces off (this file's chains): said plainly, not a fault
        expect(asRecord(asRecord(res.body).checks).bep20_internal_transfers).toMatch(
          /^off: BNB sent to deposit addresses by contracts is not credited/
        )
        // custody's part: no operation yet; no node answers in this file, so the gas wallets are unknown (not degraded)
        expect(asRecord(asRecord(res.body).custody)).toMatchObject({
          operations: {},
          oldest_in_flight_seconds: 0,
          oldest_in_flight: null
        })
        const metrics = yield* client.request("GET", "/metrics")
        expect(metrics.status).toBe(200)
        expect(metrics.text).toContain("# TYPE facet_indexer_lag_blocks gauge")
        // the process's own memory, as prom-client names it
        expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(metrics.text)?.[1])).toBeGreaterThan(10_000_000)
        expect(metrics.text).toMatch(/^nodejs_heap_size_used_bytes \d+$/m)
      })
    )
  })
})
