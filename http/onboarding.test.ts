import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"

const application = (overrides: Record<string, unknown> = {}) => ({
  project_name: "Nebula Shop",
  business_type: "e-commerce",
  use_case: "accept USDT for digital goods",
  agree_terms: true,
  contact_email: "owner@nebula.example",
  webhook_url: "https://nebula.example/hooks/facet",
  ...overrides
})

const apply = (body: unknown) =>
  Effect.flatMap(TestClient, (client) => client.request("POST", "/v1/ai/merchant-apply", { json: body }))

const env = (body: unknown) => asRecord(asRecord(body).env)

describe("AI merchant onboarding", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect("provisions a live merchant package with a working key, once", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* apply(application({ project_name: "Package Test", extra_field: { anything: 1 } }))
        expect(res.status).toBe(201)
        const body = asRecord(res.body)
        expect(body).toMatchObject({
          status: "provisioned",
          mode: "live",
          integration_mode: "checkout",
          live_ready: true
        })
        const e = env(body)
        expect(Object.keys(e).sort()).toEqual([
          "FACET_API_BASE_URL",
          "FACET_API_KEY",
          "FACET_INTEGRATION_MODE",
          "FACET_MERCHANT_ID",
          "FACET_WEBHOOK_SECRET"
        ])
        expect(e.FACET_API_KEY).toMatch(/^fk_live_[A-Za-z0-9_-]{43}$/)
        expect(e.FACET_WEBHOOK_SECRET).toMatch(/^whsec_/)
        // the database holds the webhook secret sealed, never as the merchant got it
        const [stored] = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{
              secret: string
            }>`SELECT webhook_secret AS secret FROM merchants WHERE id = ${String(e.FACET_MERCHANT_ID)}`
        )
        expect(stored?.secret).toMatch(/^sbx1:/)
        expect(stored?.secret).not.toContain(String(e.FACET_WEBHOOK_SECRET).slice(6))
        expect(e.FACET_API_BASE_URL).toBe("http://facet.test")
        const handoff = asRecord(body.merchant_console)
        expect(handoff.console_token).toMatch(/^fct_/)
        expect(handoff.token_login_url).toContain(String(handoff.console_token))
        expect(handoff.setup_required).toBe(true)
        expect(Date.parse(String(handoff.console_token_expires_at)) - Date.now()).toBeGreaterThan(23 * 3600 * 1000)
        expect(body.onboarding_status_url).toBe(`http://facet.test/v1/ai/onboarding-status/${e.FACET_MERCHANT_ID}`)
        expect(String(body.integration_prompt)).toMatch(/POST \/v1\/orders/)
        expect(String(body.integration_prompt)).toMatch(/HMAC-SHA256/)
        // default assets are enabled, the custom one is not
        expect(body.enabled_assets).toEqual([
          "BEP20-BNB",
          "BEP20-USDT",
          "SOLANA-SOL",
          "SOLANA-USDT",
          "TRC20-TRX",
          "TRC20-USDT"
        ])

        const status = yield* client.request(
          "GET",
          String(body.onboarding_status_url).replace("http://facet.test", ""),
          {
            apiKey: String(e.FACET_API_KEY)
          }
        )
        expect(status.status).toBe(200)
        expect(asRecord(status.body)).toMatchObject({
          merchant_id: e.FACET_MERCHANT_ID,
          live_ready: true,
          provisioning_status: "completed"
        })

        // only hashes are stored: no secret appears anywhere in the database
        const sql = yield* SqlClient.SqlClient
        const dump = yield* sql<{ row: string }>`
          SELECT row_to_json(t)::text AS row FROM (
            SELECT * FROM api_keys) t
          UNION ALL SELECT row_to_json(c)::text FROM console_handoffs c
          UNION ALL SELECT row_to_json(m)::text FROM (SELECT id, application FROM merchants) m`
        const text = dump.map((r) => r.row).join("\n")
        expect(text).not.toContain(String(e.FACET_API_KEY))
        expect(text).not.toContain(String(handoff.console_token))
        // the application is kept whole, additional properties included
        expect(text).toContain("extra_field")
      })
    )

    it.effect("answers a repeated application with 200 and re-issues no secret", () =>
      Effect.gen(function* () {
        const first = yield* apply(application({ project_name: "Repeat Co" }))
        expect(first.status).toBe(201)
        const again = yield* apply(application({ project_name: "  repeat co ", contact_email: "OWNER@nebula.example" }))
        expect(again.status).toBe(200)
        const body = asRecord(again.body)
        expect(body.status).toBe("already_provisioned")
        expect(body.merchant_id).toBe(asRecord(first.body).merchant_id)
        expect(env(body).FACET_API_KEY).toBeUndefined()
        expect(env(body).FACET_WEBHOOK_SECRET).toBeUndefined()
        expect(asRecord(body.merchant_console).console_token).toBeUndefined()
        expect(asRecord(body.merchant_console).token_login_url).toBeUndefined()
      })
    )

    it.effect("identifies a repeat without email by website or repository", () =>
      Effect.gen(function* () {
        const noEmail = {
          project_name: "Repo Only",
          contact_email: undefined,
          repository_url: "https://git.example/repo-only"
        }
        expect((yield* apply(application(noEmail))).status).toBe(201)
        expect((yield* apply(application(noEmail))).status).toBe(200)
        const other = yield* apply(application({ ...noEmail, repository_url: "https://git.example/someone-else" }))
        expect(other.status).toBe(409)
      })
    )

    it.effect("refuses the same project name from another applicant with 409", () =>
      Effect.gen(function* () {
        expect((yield* apply(application({ project_name: "Taken Name" }))).status).toBe(201)
        const res = yield* apply(application({ project_name: "taken name", contact_email: "someone@else.example" }))
        expect(res.status).toBe(409)
        expect(asRecord(res.body).error).toMatch(/already registered/)
      })
    )

    it.effect("provisions once when the same application races itself", () =>
      Effect.gen(function* () {
        const results = yield* Effect.all(
          Array.from({ length: 6 }, () => apply(application({ project_name: "Race Project" }))),
          { concurrency: "unbounded" }
        )
        const statuses = results.map((r) => r.status).sort()
        expect(statuses).toEqual([200, 200, 200, 200, 200, 201])
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{
          n: string
        }>`SELECT count(*) AS n FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE m.project_key = 'race project'`
        expect(rows[0]?.n).toBe("1")
      })
    )

    it.effect("validates the application field by field", () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<[Record<string, unknown>, RegExp]> = [
          [application({ agree_terms: false }), /agree_terms/],
          [application({ agree_terms: "yes" }), /agree_terms/],
          [application({ project_name: "A" }), /project_name/],
          [application({ project_name: "  x " }), /project_name/],
          [application({ business_type: undefined }), /business_type/],
          [application({ use_case: 42 }), /use_case/],
          [application({ website: "not a url" }), /website/],
          [application({ webhook_url: "ftp://x.example/hook" }), /webhook_url/],
          [application({ contact_email: "nobody" }), /contact_email/],
          [application({ preferred_chains: ["TRC20", "DOGE"] }), /preferred_chains/],
          [application({ integration_mode: "crypto_bank" }), /integration_mode/]
        ]
        for (const [body, message] of cases) {
          const res = yield* apply(body)
          expect(res.status, JSON.stringify(body)).toBe(400)
          expect(String(asRecord(res.body).error)).toMatch(message)
        }
      })
    )

    it.effect("answers malformed bodies with 400 and oversized ones with 413, never 500", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const bad = yield* client.request("POST", "/v1/ai/merchant-apply", { rawBody: '{"project_name": ' })
        expect(bad.status).toBe(400)
        expect(asRecord(bad.body).error).toMatch(/not valid JSON/)
        const empty = yield* client.request("POST", "/v1/ai/merchant-apply", { rawBody: "" })
        expect(empty.status).toBe(400)
        const array = yield* client.request("POST", "/v1/ai/merchant-apply", { json: [1, 2] })
        expect(array.status).toBe(400)
        const huge = yield* client.request("POST", "/v1/ai/merchant-apply", {
          json: application({ use_case: "x".repeat(2 * 1024 * 1024) })
        })
        expect(huge.status).toBe(413)
        expect(asRecord(huge.body).error).toMatch(/exceeds/)
      })
    )

    it.effect("uses the chosen integration mode for the prompt and readiness", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const res = yield* apply(
          application({ project_name: "Wallet Exchange", integration_mode: "exchange_wallet", webhook_url: undefined })
        )
        expect(res.status).toBe(201)
        const body = asRecord(res.body)
        expect(body.integration_mode).toBe("exchange_wallet")
        expect(String(body.integration_prompt)).toMatch(/deposit-addresses/)
        expect(String(body.integration_prompt)).not.toMatch(/POST \/v1\/orders \{/)
        // deposits are announced only by webhook: without webhook_url an exchange wallet is not live-ready
        expect(body.live_ready).toBe(false)
        const status = yield* client.request("GET", `/v1/ai/onboarding-status/${String(body.merchant_id)}`, {
          apiKey: String(env(body).FACET_API_KEY)
        })
        const s = asRecord(status.body)
        expect(s.live_ready).toBe(false)
        expect(s.missing).toEqual(["webhook_url_configured"])
        expect(Array.isArray(s.next_steps) && s.next_steps.some((step) => String(step).includes("webhook_url"))).toBe(
          true
        )

        const hybrid = asRecord(
          (yield* apply(application({ project_name: "Hybrid Co", integration_mode: "hybrid" }))).body
        )
        expect(String(hybrid.integration_prompt)).toMatch(/POST \/v1\/orders/)
        expect(String(hybrid.integration_prompt)).toMatch(/deposit-addresses/)
        expect(hybrid.live_ready).toBe(true)
      })
    )

    it.effect("answers onboarding status with 401 without a valid key and 403 for another merchant", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const a = asRecord((yield* apply(application({ project_name: "Status A" }))).body)
        const b = asRecord((yield* apply(application({ project_name: "Status B" }))).body)
        const path = `/v1/ai/onboarding-status/${String(a.merchant_id)}`
        const missing = yield* client.request("GET", path)
        expect(missing.status).toBe(401)
        expect(asRecord(missing.body).error).toMatch(/merchant authentication is required/)
        const invalid = yield* client.request("GET", path, { apiKey: "fk_live_not-a-real-key" })
        expect(invalid.status).toBe(401)
        expect(asRecord(invalid.body).error).toMatch(/invalid or inactive/)
        const other = yield* client.request("GET", path, { apiKey: String(env(b).FACET_API_KEY) })
        expect(other.status).toBe(403)
        const unknown = yield* client.request("GET", "/v1/ai/onboarding-status/mch_nope", {
          apiKey: String(env(b).FACET_API_KEY)
        })
        expect(unknown.status).toBe(403)
      })
    )

    it.effect("rejects a key once it is revoked or its merchant suspended", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const a = asRecord((yield* apply(application({ project_name: "Revoked Co" }))).body)
        const key = String(env(a).FACET_API_KEY)
        expect((yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey: key })).status).toBe(200)
        yield* sql`UPDATE merchants SET status = 'suspended' WHERE id = ${String(a.merchant_id)}`
        const res = yield* client.request("GET", "/v1/wallet-asset-policies", { apiKey: key })
        expect(res.status).toBe(401)
        expect(asRecord(res.body).error).toMatch(/invalid or inactive/)
      })
    )
  })
})
