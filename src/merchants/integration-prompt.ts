import type { IntegrationMode } from "../domain/onboarding.js"

/**
 * The prompt handed to the merchant's AI agent (or engineer) after onboarding: what to build for the
 * chosen integration mode, and the rules that keep money and keys safe.
 */
export const integrationPrompt = (mode: IntegrationMode, baseUrl: string, projectName: string): string => {
  const common = [
    `You are integrating "${projectName}" with the Facet custodial payment API at ${baseUrl} (contract: ${baseUrl}/v1/openapi.json, guidance: ${baseUrl}/llms.txt).`,
    `An agent can use this API as MCP tools at ${baseUrl}/mcp (header X-API-Key); a TypeScript backend can use the typed client and webhook verifier in the npm package @facet-pay/client.`,
    "",
    "Secrets and safety:",
    "- Put FACET_API_KEY and FACET_WEBHOOK_SECRET in backend secrets only. Never ship them to a browser, a mobile app, logs or source control. Browsers and apps call your server; only your server calls Facet with X-API-Key.",
    "- The merchant console token is for the human owner only: hand it over, do not store it.",
    "- Fail closed on assets: call GET /v1/wallet-asset-policies and use only assets with merchant_enabled true whose actions allow what you are doing. Enable a custom asset with POST /v1/wallet-asset-enrollments first.",
    "",
    "Webhooks (POST to your webhook_url, or an order's notify_url):",
    "- Verify X-FACET-SIGNATURE = lowercase hex HMAC-SHA256 of the exact raw request body keyed with FACET_WEBHOOK_SECRET, in constant time, before parsing JSON.",
    "- Persist X-FACET-IDEMPOTENCY-KEY and skip duplicates before changing any balance or ledger; return 2xx only after durable acceptance. Deliveries are retried, so the same key can arrive again.",
    "",
    "Requests:",
    '- Amounts are decimal strings ("12.5"), never floats; respect each asset\'s amount_precision.',
    "- On a timeout, retry creations with the same X-Service-Idempotency-Key and the exact same body; a 409 means the key was used for a different request.",
    "- Errors are {error: string}; branch on the HTTP status (400 fix the request, 401 key, 404 not yours, 409 reconcile, 429 back off, 503 retry reads with backoff)."
  ]
  const checkout = [
    "",
    "Hosted checkout (orders):",
    "- Create an order on your server with POST /v1/orders {amount, currency?, chain?, out_trade_no, notify_url?, return_url?, expire_minutes?} and an X-Service-Idempotency-Key; send the customer to checkout_url or show pay_address / pay_qrcode.",
    "- Fulfil only when order.updated reports status PAID (or GET /v1/orders/{order_id} shows it). CONFIRMING means seen on chain but not final; PARTIALLY_PAID and EXPIRED need your own handling; a late payment can still turn an order PAID with late_payment true."
  ]
  const wallet = [
    "",
    "Exchange-style wallets (deposit addresses):",
    "- Give each of your users a long-term address with POST /v1/deposit-addresses {external_user_id, chain, currency} (idempotent per user, chain and currency; POST /v1/deposit-addresses/batch for many).",
    "- Credit your user only on wallet.deposit.confirmed, deduplicated by its idempotency key; list history with GET /v1/deposit-addresses/{id}/transactions.",
    "- Balances: GET /v1/wallet-portfolio. available_balance is collected and withdrawable; uncollected_balance still sits in receive addresses; the total is not withdrawable.",
    "- Withdrawals: POST /v1/withdrawal-fee-quote (with the to_address, so the fees are exact) right before POST /v1/withdrawals (gross amount, no fee fields, idempotency key). A human approves each withdrawal in the console; wait for wallet.withdrawal.completed or wallet.withdrawal.failed."
  ]
  const sections = mode === "checkout" ? checkout : mode === "exchange_wallet" ? wallet : [...checkout, ...wallet]
  return [...common, ...sections].join("\n")
}
