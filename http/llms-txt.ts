/** GET /llms.txt: plain-text guidance for AI agents that discover the service. */
export const llmsTxt = (
  baseUrl: string,
  contractVersion: string
): string => `# Facet — custodial crypto payments for merchants and AI agents

> Facet takes crypto payments on TRON (TRC20), BNB Smart Chain (BEP20) and Solana for merchants:
> hosted checkout orders, long-term deposit addresses per end user, custodial balances, collection
> (sweeps) and withdrawals with human approval. Money values are decimal strings, never floats.

Contract version ${contractVersion}. Machine-readable contract: ${baseUrl}/v1/openapi.json
(also at ${baseUrl}/.well-known/openapi.json). Change history: ${baseUrl}/v1/api-changelog.

## Onboard
1. POST ${baseUrl}/v1/ai/merchant-apply with {project_name, business_type, use_case, agree_terms: true,
   contact_email, webhook_url, integration_mode: "checkout" | "exchange_wallet" | "hybrid"}. No key needed.
   201 returns the live package once: env (FACET_API_BASE_URL, FACET_API_KEY, FACET_MERCHANT_ID,
   FACET_WEBHOOK_SECRET, FACET_INTEGRATION_MODE), merchant_console, integration_prompt,
   onboarding_status_url. Repeating the same application returns 200 and re-issues no secret.
2. Poll onboarding_status_url from the backend with X-API-Key until live_ready is true; follow next_steps.
3. GET ${baseUrl}/v1/wallet-asset-policies and use only assets with merchant_enabled true and the action
   you need (fail closed). Enable custom assets with POST ${baseUrl}/v1/wallet-asset-enrollments.

## Connect as an agent (MCP) or from TypeScript
- MCP server: ${baseUrl}/mcp (streamable HTTP), the merchant's key in the X-API-Key header. Every /v1 endpoint
  is a tool named <group>_<endpoint> (orders_create, orders_get, deposit_addresses_create, withdrawals_quote,
  withdrawals_create, refunds_create, payment_links_create, …): path and query parameters by name, the JSON
  body under "body", idempotency_key where the endpoint takes one (reuse it on a retry; required, your own, for withdrawals_create,
  withdrawal_batches_create and refunds_create). Refusals are tool
  errors with the API's {status, error}. onboarding_merchant_apply works without a key. Resources:
  facet://llms.txt, facet://contract/version, facet://asset-policies, facet://orders/open,
  facet://orders/{order_id}. No tool approves money out: people do, in the console.
- TypeScript: the npm package @facet-pay/client: a typed client (Effect, or Promises), retries only where
  the contract makes them safe, and verifyFacetWebhook(rawBody, headers, secret) for the webhook receiver.

## Safety rules
- The live API key (FACET_API_KEY) and FACET_WEBHOOK_SECRET belong in backend secrets only: never in a
  browser, mobile app, log, prompt transcript or source control. Clients call the merchant's server.
- The console token / token_login_url is given only to the human owner, once. Do not store it.
- Verify every webhook: X-FACET-SIGNATURE is the lowercase hex HMAC-SHA256 of the raw request body keyed
  with the webhook secret. Verify over the raw bytes, in constant time, before parsing JSON.
- Persist X-FACET-IDEMPOTENCY-KEY and deduplicate before touching balances; answer 2xx only after that.
- order.updated bodies carry event: payment.detected, payment.confirmed, payment.reversed (a reorg dropped
  a payment not yet final; the body's order shows the resulting status), payment.restored (the same payment
  mined again), order.expired (once per order), order.partially_paid, order.paid (once per order: fulfil
  on it, once per order id), payment.overpaid (a payment after PAID: the order's overpaid_amount, never a
  second fulfilment). Ignore a body whose sequence is older than one already applied for its order. Credit
  a payment on payment.confirmed only. The webhooks and their bodies are in the contract under "webhooks".
- Balances: GET ${baseUrl}/v1/wallet-portfolio. Only available_balance is withdrawable (collected into the
  main wallet). uncollected_balance is still in receive addresses (sweep it with POST
  /v1/wallet-assets/{asset_key}/sweep, key with the wallet scope; one sweep per wallet at a time, 409
  otherwise); locked_balance is reserved by withdrawals; total_balance is NOT withdrawable. Do not read
  balances from the deprecated GET /v1/wallet-assets.
- Withdrawals: POST ${baseUrl}/v1/withdrawal-fee-quote {chain, currency, amount, to_address?} right before
  POST ${baseUrl}/v1/withdrawals {chain, currency, amount (gross), to_address, out_withdrawal_no?} — never send
  fee fields. Give the quote the to_address you will withdraw to: it is then exact (fee_kind "exact");
  without one it is an upper bound (fee_kind "upper_bound", a recipient that never held the asset). The funds are locked at once; the withdrawal is PENDING until the human owner approves it in
  the merchant console (the API never approves; do not ask for a way around it). Then APPROVED →
  BROADCAST (tx_hash) → COMPLETED, or FAILED; REJECTED, CANCELLED (also after 72 h undecided) and FAILED
  unlock the funds. Wait for wallet.withdrawal.completed / wallet.withdrawal.failed; poll
  GET /v1/withdrawals/{id} as a fallback. Token withdrawals: network_fee is paid by the platform (not
  deducted); native ones (TRX, BNB): it is deducted from the amount.
- Withdrawal policy (set by the merchant's people in the console; the API can read it, never change it):
  with the address book on, POST /v1/withdrawals only to a usable entry of GET ${baseUrl}/v1/withdrawal-addresses
  (a new entry cools off, 24 h by default); per-asset limits per withdrawal and per rolling 24 h; and a quorum:
  GET /v1/withdrawals/{id} shows approvals and required_approvals. A refusal is 403 {error} saying why
  (unknown address, cooling off until a time, which limit and what is left); nothing is locked. Do not retry
  a 403: tell the human what the error says. Splitting an amount to pass a limit still counts in the window.
- Refunds: never send money back to a payment's from address (often an exchange's hot wallet). Call
  POST ${baseUrl}/v1/orders/{order_id}/refunds {amount?, chain?, currency?, rate?, reason?} (key with the
  withdrawals scope; the payment must be collected first) and give the returned claim_url to the customer
  only: it is a credential, shown once (POST /v1/refunds/{id}/claim-link replaces a lost one). The customer
  names the address; a person still approves the payout in the console. Follow refund.updated webhooks
  (key refund.updated:{refund_id}:{STATUS}); the order shows refunded_amount.
- Payment links: to sell without writing checkout code, POST ${baseUrl}/v1/payment-links {product_name, amount
  or min_amount/max_amount, currency or accepted_assets, max_uses?, expires_at?} (orders scope) and share its
  url; each visit is an order of its own with payment_link_id; reconcile with order.updated as for any order.
  A use is a PAID order: uses can pass max_uses when customers already at checkout pay after the last one
  (deliver or refund those).
- Underpayment tolerance (set by people in the console, per asset): an order short by no more than it is PAID
  with underpaid_amount; read underpaid_amount before shipping, as you read late_payment.
- Batch payouts: POST ${baseUrl}/v1/withdrawal-batches {items: [withdrawal requests, each with its own
  out_withdrawal_no], at most 500} with an idempotency key. A refusal lists every bad item in items: fix them
  and resend the whole batch. People approve the batch once in the console; track each item by its webhook or
  GET /v1/withdrawal-batches/{id}/items.
- Accounting: GET ${baseUrl}/v1/ledger-export?from=&to=&format=csv|json streams every movement of the
  merchant's money with running balances per account (reproducible from the ledger alone). One export at a time
  per merchant (429 beyond one waiting, 503 when the service is busy: both with Retry-After); read it steadily,
  a client that stops reading is cut off.
- After a timeout, retry a creation with the same X-Service-Idempotency-Key and the exact same body.
- Errors are {"error": "..."}; branch on the HTTP status. 429: back off (Retry-After). 503: retry reads.
`
