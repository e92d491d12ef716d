import { Schema } from "effect"

/**
 * The contract version this service implements (contract section 9): the published contract's 2026-08-02
 * and the additive, non-breaking features since, each an entry below.
 */
export const CONTRACT_VERSION = "2026-11-29"

export const ChangelogEntry = Schema.Struct({
  version: Schema.String,
  date: Schema.String,
  type: Schema.String,
  breaking: Schema.Boolean,
  changes: Schema.Array(Schema.String)
})

export const ApiChangelog = Schema.Struct({
  api: Schema.String,
  current_version: Schema.String,
  entries: Schema.Array(ChangelogEntry)
}).annotations({ identifier: "APIChangelog" })
export type ApiChangelog = typeof ApiChangelog.Type

const entry = (version: string, type: string, changes: ReadonlyArray<string>) => ({
  version,
  // "2026-07-19.2" was published on 2026-07-19
  date: version.slice(0, 10),
  type,
  breaking: false,
  changes
})

/** Newest first; every entry is non-breaking. */
export const changelog: ApiChangelog = {
  api: "facet-merchant-api",
  current_version: CONTRACT_VERSION,
  entries: [
    entry("2026-11-29", "fix", [
      "withdrawal fee quote: a quote was below the fee charged when the recipient had never held the asset (TRON USDT: quoted for ~64k energy, charged for ~130k); POST /v1/withdrawal-fee-quote now takes an optional to_address (checked as a withdrawal's destination) and answers fee_kind: exact (what a withdrawal of this amount to to_address created now is charged, to_address echoed) or upper_bound (no destination: the dearest recipient, one that never held the asset — a new TRON account or token holder, a Solana token account to create, a new BEP20 holder; a native's net_amount is then the least its payee receives); every earlier field unchanged",
      "webhooks (issue 53): order.updated gains body event order.paid, the order's transition to PAID, once per order, keyed {order_id}:order.paid:PAID (the fallback format): fulfil on it, once per order id; a payment that becomes final while its order is PAID already and did not pay it is body event payment.overpaid (deposit:…:payment.overpaid), never a second payment.confirmed saying PAID, and is not announced while pending; orders show overpaid_amount (paid_amount − amount, when above zero) in the API, the console and the webhooks; every order, withdrawal and refund event carries sequence (1, 2, … per resource) and one resource's events are delivered in that order (a later one waits while an earlier one is retried): ignore a body older than one applied; replays go to the order's notify_url or the merchant's current webhook_url; expiry decides PARTIALLY_PAID from the confirmed payments; event names and key formats unchanged"
    ]),
    entry("2026-11-26", "feature", [
      "refunds: POST /v1/orders/{order_id}/refunds (all, part, or at a stated rate; never more than was paid and not yet refunded) locks the amount and returns a one-time claim_url; the customer names the destination on the hosted claim page, which creates a withdrawal of kind refund under the merchant's approval policy; GET /v1/refunds, /v1/refunds/{refund_id}, POST /v1/refunds/{refund_id}/cancel and /claim-link, GET /v1/orders/{order_id}/refunds; refunded_amount on orders; kind, refund_id and order_id on withdrawals; webhook refund.updated keyed refund.updated:{refund_id}:{STATUS}; policy setting refund_address_book",
      "payment links: POST /v1/payment-links (fixed amount or customer-chosen within min_amount/max_amount, accepted_assets, max_uses, expires_at), GET /v1/payment-links, /v1/payment-links/{payment_link_id} with uses (its PAID orders: a visit never takes one) and totals, POST /v1/payment-links/{payment_link_id}/deactivate, GET /v1/payment-links/{payment_link_id}/orders; each visit of the public page /pay/{payment_link_id} creates an order carrying payment_link_id",
      "underpayment tolerance: a per-asset merchant setting (percent and/or amount, off by default) lets an order whose confirmed total is short by no more than it become PAID with underpaid_amount, shown on orders and in order.updated",
      "withdrawal batches: POST /v1/withdrawal-batches (up to 500 items, one idempotency key) admitted whole or refused whole with every refused item in items, the sum locked at once, approved once in the console by the quorum its total per asset needs (a batch is one decision: five items of 100 need what one withdrawal of 500 needs), each item then sent as a withdrawal with batch_id and its own webhook; GET /v1/withdrawal-batches, /{batch_id}, /{batch_id}/items",
      "accounting export: GET /v1/ledger-export?from=&to=&format=csv|json streams every movement of the merchant's money with the running balance per account, formula-injection safe",
      "read-only withdrawal address book (GET /v1/withdrawal-addresses) and required_approvals with approvals on withdrawals",
      "webhooks: payment.reversed and payment.restored bodies carry occurrence (1 for the first of a payment, n for the n-th), from which the #n suffix of their X-FACET-IDEMPOTENCY-KEY is made, so a receiver can check the whole key against the signed body; outside /v1: an MCP server at /mcp and a typed client package, @facet-pay/client"
    ]),
    entry("2026-08-02", "feature", [
      "optional integration_mode on onboarding (default checkout)",
      "mode-specific prompts",
      "exchange-wallet readiness without checkout creation",
      "discovery guidance file at /llms.txt and a well-known redirect to the contract"
    ]),
    entry("2026-07-22", "documentation", [
      "platform asset catalog separated from per-merchant enrollment",
      "POST /v1/wallet-asset-enrollments",
      "merchant_enabled and default_for_new_merchants",
      "idempotency header for order and withdrawal creation",
      "webhook contracts completed",
      "native gas assets TRX, BNB, SOL in fee quotes",
      "Polygon sunset",
      "checkout_mode and accepted_assets on orders"
    ]),
    entry("2026-07-21", "feature", [
      "SOLANA-SOL and SOLANA-USDT policies",
      "threshold signing for Solana",
      "associated-token-account creation",
      "automatic SOL gas funding",
      "SOL-denominated fee policies"
    ]),
    entry("2026-07-20", "documentation", [
      "published the contract and developer reference",
      "documented errors, amount rules, withdrawal assets, retry guidance"
    ]),
    entry("2026-07-19.2", "fix", [
      "added POST /v1/withdrawal-fee-quote",
      "token fees separated from native gas budgets",
      "fee policy snapshot stored at withdrawal creation",
      "unsupported precision and zero-net withdrawals rejected before funds are locked"
    ]),
    entry("2026-07-18", "hardening", [
      "order-address attribution and deposit-address identity clarified",
      "deposit webhook idempotency fields documented",
      "Solana withdrawals and collection marked unavailable until signing is live"
    ])
  ]
}
