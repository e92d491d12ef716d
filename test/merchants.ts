import { Effect } from "effect"
import { TestClient } from "./http-harness.js"
import { asRecord } from "./json.js"

let counter = 0

/** Onboards a fresh merchant through the real endpoint and returns its key, id and webhook secret. */
export const onboardMerchant = (overrides: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
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
    return {
      apiKey: String(env.FACET_API_KEY),
      merchantId: String(env.FACET_MERCHANT_ID),
      secret: String(env.FACET_WEBHOOK_SECRET)
    }
  })

/**
 * An exchange-mode merchant with a TRC20 USDT deposit address for each of `users`, made through the real
 * endpoints: each address with its receive wallet, in the order asked.
 */
export const merchantWithDepositAddresses = (users: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
    const res = yield* client.request("POST", "/v1/deposit-addresses/batch", {
      apiKey,
      json: { external_user_ids: users, chain: "TRC20", currency: "USDT" }
    })
    const items = asRecord(res.body).items
    const addresses = (Array.isArray(items) ? items : []).map((item) => {
      const address = asRecord(asRecord(item).deposit_address)
      return { address: String(address.address), walletId: String(address.wallet_id) }
    })
    if (addresses.length !== users.length) throw new Error(`deposit addresses: ${res.status} ${res.text}`)
    return { apiKey, merchantId, addresses }
  })
