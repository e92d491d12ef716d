import { Schema } from "effect"

/** The contract version this service implements (contract section 9). */
export const CONTRACT_VERSION = "2026-08-02"

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
