import { Effect } from "effect"
import { TestClient } from "./http-harness.js"
import { asRecord } from "./json.js"

let counter = 0

/** Onboards a fresh merchant through the real endpoint and returns its key and id. */
export const onboardMerchant = (overrides: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const client = yield* TestClient
    counter += 1
    const name = `Merchant ${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`
    const res = yield* client.request("POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: name,
        business_type: "shop",
        use_case: "payments",
        agree_terms: true,
        contact_email: `owner${counter}@merchant.example`,
        webhook_url: "https://merchant.example/hooks",
        ...overrides
      }
    })
    if (res.status !== 201) throw new Error(`onboarding failed: ${res.status} ${res.text}`)
    const env = asRecord(asRecord(res.body).env)
    return { apiKey: String(env.FACET_API_KEY), merchantId: String(env.FACET_MERCHANT_ID) }
  })
