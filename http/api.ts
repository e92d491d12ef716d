import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Schema } from "effect"
import { AssetPolicy, AssetPolicyList, EnrollmentRequest } from "../src/domain/asset-policy.js"
import { ApiChangelog, CONTRACT_VERSION } from "../src/domain/changelog.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
  Internal,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  UnsupportedMediaType,
  RateLimited,
  ServiceUnavailable,
  Unauthorized
} from "../src/domain/errors.js"
import { MerchantApplyRequest, MerchantApplyResponse, OnboardingStatus } from "../src/domain/onboarding.js"
import {
  BatchCreateDepositAddressRequest,
  BatchResult,
  CreateDepositAddressRequest,
  DepositAddress,
  DepositAddressList,
  DepositAddressListQuery,
  DepositTransactionsQuery
} from "../src/domain/deposit-address.js"
import { SweepOperation, SweepRequest } from "../src/domain/sweep.js"
import { EnergyReport } from "../src/domain/energy-report.js"
import {
  PortfolioQuery,
  WalletAssetDetail,
  WalletAssetDetailQuery,
  WalletAssetList,
  WalletPortfolio
} from "../src/domain/wallet-portfolio.js"
import { CheckoutStatus } from "../src/domain/checkout.js"
import { CreateOrderRequest, IdempotencyKeyHeader, Order, OrderList, OrderListQuery } from "../src/domain/order.js"
import { TransactionList, TransactionListQuery } from "../src/domain/transaction.js"
import { WithdrawalAddressList, WithdrawalAddressListQuery } from "../src/domain/withdrawal-address.js"
import {
  CreateWithdrawalRequest,
  FeeQuote,
  FeeQuoteRequest,
  Withdrawal,
  WithdrawalList,
  WithdrawalListQuery
} from "../src/domain/withdrawal.js"
import { LedgerExportQuery } from "../src/domain/ledger-export.js"
import { CreateRefundRequest, OrderRefundListQuery, Refund, RefundList, RefundListQuery } from "../src/domain/refund.js"
import {
  BatchConflict,
  BatchForbidden,
  BatchInvalid,
  CreateWithdrawalBatchRequest,
  WithdrawalBatch,
  WithdrawalBatchItemsQuery,
  WithdrawalBatchList,
  WithdrawalBatchListQuery
} from "../src/domain/withdrawal-batch.js"
import { CurrentMerchant } from "../src/merchants/principal.js"
import { AGENT_NEVER_APPROVES, AgentHints, AgentNote } from "./mcp/agent-annotations.js"
import {
  CreatePaymentLinkRequest,
  PayForm,
  PaymentLink,
  PaymentLinkList,
  PaymentLinkListQuery
} from "../src/domain/payment-link.js"

/**
 * The `/v1` API, declared once: the server, the OpenAPI document and the tests' client all come from
 * this declaration.
 */

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Unauthorized,
  provides: CurrentMerchant,
  security: {
    apiKey: HttpApiSecurity.apiKey({ key: "X-API-Key", in: "header" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "The merchant's live API key, from onboarding. Backend use only.")
    )
  }
}) {}

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const IndexerHealth = Schema.Struct({
  chain: Schema.String,
  state: Schema.String,
  head: Schema.String,
  cursor: Schema.String,
  lag_blocks: Schema.Number,
  lag_seconds: Schema.Number,
  watched_addresses: Schema.Number,
  detail: Schema.String
})

export const HealthReport = Schema.Struct({
  status: Schema.Literal("ok", "unavailable", "degraded"),
  checks: Schema.Record({ key: Schema.String, value: Schema.String }),
  indexers: Schema.Array(IndexerHealth),
  /** Why the service is degraded (a halted indexer, an unreachable node); empty when it is ok. */
  reasons: Schema.Array(Schema.String),
  /** Chains with several nodes configured: how each node is doing (a failing one is passed over). */
  nodes: Schema.optional(
    Schema.Array(
      Schema.Struct({
        chain: Schema.String,
        endpoints: Schema.Array(
          Schema.Struct({
            endpoint: Schema.String,
            state: Schema.Literal("ok", "failing", "cooling_down", "wrong_chain", "unused"),
            consecutive_failures: Schema.Number,
            last_error: Schema.String
          })
        )
      })
    )
  ),
  custody: Schema.optional(
    Schema.Struct({
      operations: Schema.Record({ key: Schema.String, value: Schema.Number }),
      transactions: Schema.Record({ key: Schema.String, value: Schema.Number }),
      oldest_in_flight_seconds: Schema.Number,
      oldest_in_flight: Schema.NullOr(Schema.String),
      /** Wallets halted on a transfer whose fate the chain cannot yet prove: nothing leaves them meanwhile. */
      halted: Schema.Array(
        Schema.Struct({
          operation_id: Schema.String,
          chain: Schema.String,
          wallet_address: Schema.String,
          reason: Schema.String,
          seconds: Schema.Number
        })
      ),
      gas_wallets: Schema.Array(
        Schema.Struct({
          chain: Schema.String,
          address: Schema.String,
          asset: Schema.String,
          balance: Schema.String,
          gas_status: Schema.String,
          /** TRON: what the stake can lend (TRX), what one USDT transfer borrows, how many such it covers now. */
          energy: Schema.optional(
            Schema.Struct({ lendable: Schema.String, per_transfer: Schema.String, transfers: Schema.Number })
          )
        })
      ),
      /** TRON: the staked TRX that lends custody's transfers their energy, as last read (every 15 s). */
      energy: Schema.optional(Schema.Struct({ ...EnergyReport.fields, read_at: Schema.String }))
    })
  )
}).annotations({ identifier: "HealthReport" })

export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthReport)
      .addError(ServiceUnavailable)
      .annotate(
        OpenApi.Summary,
        "Readiness: 200 only when the database is migrated and nothing is degraded; 503 `unavailable` or `degraded` (a halted indexer, a node unreachable too long) with the reasons; per-chain indexer lag"
      )
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4" }))
      .annotate(
        OpenApi.Summary,
        "Prometheus metrics: per-chain indexer lag, reconciliation, custody, the ledger export's turns, and the process's memory and CPU"
      )
  ) {}

export class DeveloperGroup extends HttpApiGroup.make("developer")
  .add(
    HttpApiEndpoint.get("openapi", "/v1/openapi.json")
      .addSuccess(JsonObject)
      .annotate(OpenApi.Summary, "This contract as OpenAPI 3.1 (GET and HEAD)")
  )
  .add(
    HttpApiEndpoint.get("changelog", "/v1/api-changelog")
      .addSuccess(ApiChangelog)
      .annotate(OpenApi.Summary, "Contract change history, newest first (GET and HEAD)")
  )
  .add(
    HttpApiEndpoint.get("llmsTxt", "/llms.txt")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; charset=utf-8" }))
      .annotate(OpenApi.Summary, "Guidance for AI agents: what the service is, how to onboard, safety rules")
  )
  .add(
    HttpApiEndpoint.get("wellKnownOpenapi", "/.well-known/openapi.json")
      .addSuccess(HttpApiSchema.Empty(308))
      .annotate(OpenApi.Summary, "Permanent redirect (308) to /v1/openapi.json")
  ) {}

export class OnboardingGroup extends HttpApiGroup.make("onboarding")
  .add(
    HttpApiEndpoint.post("merchantApply", "/v1/ai/merchant-apply")
      .setPayload(MerchantApplyRequest)
      .addSuccess(MerchantApplyResponse, { status: 201 })
      .addSuccess(MerchantApplyResponse.annotations({ identifier: "AIMerchantApplyExisting" }), { status: 200 })
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Provision a live merchant (201), or return the existing one for a repeated application (200)"
      )
      .annotate(AgentHints, { idempotent: true })
      .annotate(
        AgentNote,
        "The answer holds secrets: env.FACET_API_KEY and env.FACET_WEBHOOK_SECRET belong in the merchant's backend secrets (not in a transcript, a log or source code), and merchant_console.console_token is the human owner's alone: show it to them once, never use it yourself and do not keep it. With it the owner sets up the console, where people approve withdrawals."
      )
  )
  .add(
    HttpApiEndpoint.get("onboardingStatus", "/v1/ai/onboarding-status/:merchant_id")
      .setPath(Schema.Struct({ merchant_id: Schema.String }))
      .addSuccess(OnboardingStatus)
      .addError(Forbidden)
      .middleware(Authentication)
      .annotate(OpenApi.Summary, "Provisioning and live-readiness of the key's own merchant")
  ) {}

export class WalletAssetsGroup extends HttpApiGroup.make("walletAssets")
  .add(
    HttpApiEndpoint.get("policies", "/v1/wallet-asset-policies")
      .addSuccess(AssetPolicyList)
      .annotate(OpenApi.Summary, "The platform asset catalogue with this merchant's enrollment (fail closed)")
  )
  .add(
    HttpApiEndpoint.post("enroll", "/v1/wallet-asset-enrollments")
      .setPayload(EnrollmentRequest)
      .addSuccess(AssetPolicy)
      .annotate(OpenApi.Summary, "Enable a platform-supported asset for this merchant (idempotent)")
      .annotate(AgentHints, { idempotent: true })
  )
  .add(
    HttpApiEndpoint.get("portfolio", "/v1/wallet-portfolio")
      .setUrlParams(PortfolioQuery)
      .addSuccess(WalletPortfolio)
      .annotate(
        OpenApi.Summary,
        "Balances per asset and network from the ledger: available (collected, withdrawable), uncollected (still in receive addresses), locked (reserved); values in USDT; gas wallet status"
      )
  )
  .add(
    HttpApiEndpoint.get("assets", "/v1/wallet-assets")
      .addSuccess(WalletAssetList)
      .annotate(OpenApi.Deprecated, true)
      .annotate(
        OpenApi.Summary,
        "Deprecated (see Deprecation and Link headers): use GET /v1/wallet-portfolio. Totals here are not withdrawable"
      )
  )
  .add(
    HttpApiEndpoint.get("asset", "/v1/wallet-assets/:asset_key")
      .setPath(Schema.Struct({ asset_key: Schema.String }))
      .setUrlParams(WalletAssetDetailQuery)
      .addSuccess(WalletAssetDetail)
      .annotate(
        OpenApi.Summary,
        "The receive wallets of one asset with their uncollected balances; q = address, wallet number or tx hash"
      )
  )
  .add(
    HttpApiEndpoint.post("sweep", "/v1/wallet-assets/:asset_key/sweep")
      .setPath(Schema.Struct({ asset_key: Schema.String }))
      .setPayload(SweepRequest)
      .addSuccess(SweepOperation)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Collect a receive wallet's uncollected balance into the main wallet (key with `wallet` scope); the gas a token sweep needs is funded first (GAS_FUNDING). One sweep per wallet at a time (409)"
      )
      .annotate(
        AgentNote,
        "It starts at once, with no approval: the funds stay the merchant's (receive wallet to main wallet) but network gas is spent, so sweep only when your user asked for it."
      )
      .annotate(AgentHints, { destructive: true })
  )
  .add(
    HttpApiEndpoint.get("sweepStatus", "/v1/wallet-assets/:asset_key/sweeps/:operation_id")
      .setPath(Schema.Struct({ asset_key: Schema.String, operation_id: Schema.String }))
      .addSuccess(SweepOperation)
      .annotate(OpenApi.Summary, "A sweep (or its gas funding) as it stands now")
  )
  .middleware(Authentication) {}

export class OrdersGroup extends HttpApiGroup.make("orders")
  .add(
    HttpApiEndpoint.get("list", "/v1/orders")
      .setUrlParams(OrderListQuery)
      .addSuccess(OrderList)
      .annotate(OpenApi.Summary, "This merchant's orders, newest first (page/size)")
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/orders")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateOrderRequest)
      .addSuccess(Order, { status: 201 })
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Create a hosted checkout order (a key with the orders scope) with its own pay address(es); idempotent with X-Service-Idempotency-Key"
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/orders/:order_id")
      .setPath(Schema.Struct({ order_id: Schema.String }))
      .addSuccess(Order)
      .annotate(OpenApi.Summary, "One of this merchant's orders")
  )
  .middleware(Authentication) {}

export class TransactionsGroup extends HttpApiGroup.make("transactions")
  .add(
    HttpApiEndpoint.get("search", "/v1/transactions")
      .setUrlParams(TransactionListQuery)
      .addSuccess(TransactionList)
      .annotate(
        OpenApi.Summary,
        "Search this merchant's transactions by hash, address, order or withdrawal id; filters; limit/offset"
      )
  )
  .middleware(Authentication) {}

export class DepositAddressesGroup extends HttpApiGroup.make("depositAddresses")
  .add(
    HttpApiEndpoint.get("list", "/v1/deposit-addresses")
      .setUrlParams(DepositAddressListQuery)
      .addSuccess(DepositAddressList)
      .annotate(OpenApi.Summary, "This merchant's deposit addresses, newest first (limit/offset)")
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/deposit-addresses")
      .setPayload(CreateDepositAddressRequest)
      .addSuccess(DepositAddress, { status: 201 })
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Assign a long-term address to an external user for a chain and currency (idempotent; a key with the deposits scope)"
      )
      .annotate(AgentHints, { idempotent: true })
  )
  .add(
    HttpApiEndpoint.post("batch", "/v1/deposit-addresses/batch")
      .setPayload(BatchCreateDepositAddressRequest)
      .addSuccess(BatchResult)
      .addError(Forbidden)
      .annotate(
        OpenApi.Summary,
        "Assign up to 1000 deposit addresses: items, or external_user_ids with chain and currency (a key with the deposits scope)"
      )
  )
  .add(
    HttpApiEndpoint.get("transactions", "/v1/deposit-addresses/:deposit_address_id/transactions")
      .setPath(Schema.Struct({ deposit_address_id: Schema.String }))
      .setUrlParams(DepositTransactionsQuery)
      .addSuccess(TransactionList)
      .annotate(OpenApi.Summary, "Transactions into one deposit address, newest first")
  )
  .middleware(Authentication) {}

export class WithdrawalsGroup extends HttpApiGroup.make("withdrawals")
  .add(
    HttpApiEndpoint.post("quote", "/v1/withdrawal-fee-quote")
      .setPayload(FeeQuoteRequest)
      .addSuccess(FeeQuote)
      .addError(Forbidden)
      .annotate(
        OpenApi.Summary,
        "Fees of a withdrawal now (call it right before creating one; no quote id): platform fee in bps, network fee in the gas asset; exact for to_address when given, else an upper bound (fee_kind)"
      )
      .annotate(
        OpenApi.Description,
        "With to_address (checked as POST /v1/withdrawals checks it: 400 otherwise) the quote is exact: a withdrawal of this amount to that address created now carries exactly these fees and net_amount (fee_kind exact, to_address echoed). Without it the quote is an upper bound (fee_kind upper_bound): the network fee of the dearest recipient, one that never held the asset (TRON: a new account, or a new token holder at about twice a holder's energy; Solana: a token account to create, its rent; BEP20: a new token holder), so a native's net_amount is the least its payee receives. A withdrawal is never charged a network fee above the one it was created with (a native's is its cap; what it does not burn goes back to available)."
      )
      .annotate(AgentHints, { readOnly: true })
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/withdrawals")
      .setUrlParams(WithdrawalListQuery)
      .addSuccess(WithdrawalList)
      .annotate(OpenApi.Summary, "This merchant's withdrawals, newest first (status filter, limit/offset)")
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/withdrawals")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateWithdrawalRequest)
      .addSuccess(Withdrawal, { status: 201 })
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Request a withdrawal (no fee fields: the fee policy is recalculated and stored): funds locked, PENDING until the approvals its policy requires are given in the merchant console (required_approvals); then signed and broadcast (BROADCAST) and COMPLETED or FAILED with a webhook. Idempotent with X-Service-Idempotency-Key"
      )
      .annotate(
        OpenApi.Description,
        "The merchant's withdrawal policy is enforced here, nothing locked when it refuses, 403 {error} saying why: with the address book on, an address that is not a usable entry of GET /v1/withdrawal-addresses (unknown, or still cooling off: the error gives the time it becomes usable); an amount above the asset's per-withdrawal limit; or one that would pass its rolling 24 h limit (the error gives what is used and what is left). 403 too for a key without the withdrawals scope."
      )
      .annotate(
        AgentNote,
        `The withdrawal is only requested: it stays PENDING until a human approves it in the merchant console (unless an auto-approval limit an operator set for the asset covers it: see status and required_approvals in the answer), so tell your user it waits for their approval. ${AGENT_NEVER_APPROVES}`
      )
      .annotate(AgentHints, { destructive: true })
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/withdrawals/:withdrawal_id")
      .setPath(Schema.Struct({ withdrawal_id: Schema.String }))
      .addSuccess(Withdrawal)
      .annotate(OpenApi.Summary, "One of this merchant's withdrawals, with its approvals so far and required_approvals")
  )
  .add(
    HttpApiEndpoint.get("addresses", "/v1/withdrawal-addresses")
      .setUrlParams(WithdrawalAddressListQuery)
      .addSuccess(WithdrawalAddressList)
      .annotate(
        OpenApi.Summary,
        "The withdrawal address book (read-only: people add entries in the console): pending and usable entries, whether it is enforced, the cooling-off; chain filter, limit/offset"
      )
  )
  .middleware(Authentication) {}

export class RefundsGroup extends HttpApiGroup.make("refunds")
  .add(
    HttpApiEndpoint.post("create", "/v1/orders/:order_id/refunds")
      .setPath(Schema.Struct({ order_id: Schema.String }))
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateRefundRequest)
      .addSuccess(Refund, { status: 201 })
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Refund what a customer paid to an order (a key with the withdrawals scope), in an asset it was paid in, all or part of it, or at a stated rate: the amount is locked and the answer carries the claim_url, shown once, to give the customer; idempotent with X-Service-Idempotency-Key"
      )
      .annotate(
        OpenApi.Description,
        "Never more than what was paid (confirmed) in the asset and not yet refunded: 400 otherwise, and 400 when the payment is not collected yet (refunds leave from the main wallet's available balance); nothing is locked when refused. The customer opens the claim_url, gives an address, and a withdrawal of kind refund is created for the merchant's approval in the console (the withdrawal policy applies; the address book only with refund_address_book on). A replay with the same key answers with a new claim_url (the earlier one stops working)."
      )
      .annotate(
        AgentNote,
        `Nothing is sent yet: give the customer the claim_url; their claim makes a withdrawal of kind refund that a human approves in the merchant console (never auto-approved). ${AGENT_NEVER_APPROVES}`
      )
      .annotate(AgentHints, { destructive: true })
  )
  .add(
    HttpApiEndpoint.get("listForOrder", "/v1/orders/:order_id/refunds")
      .setPath(Schema.Struct({ order_id: Schema.String }))
      .setUrlParams(OrderRefundListQuery)
      .addSuccess(RefundList)
      .annotate(OpenApi.Summary, "One order's refunds, newest first (limit/offset)")
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/refunds")
      .setUrlParams(RefundListQuery)
      .addSuccess(RefundList)
      .annotate(OpenApi.Summary, "This merchant's refunds, newest first (status filter, limit/offset)")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/refunds/:refund_id")
      .setPath(Schema.Struct({ refund_id: Schema.String }))
      .addSuccess(Refund)
      .annotate(OpenApi.Summary, "One of this merchant's refunds, with its withdrawal once claimed")
  )
  .add(
    HttpApiEndpoint.post("cancel", "/v1/refunds/:refund_id/cancel")
      .setPath(Schema.Struct({ refund_id: Schema.String }))
      .addSuccess(Refund)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Cancel an unclaimed refund (PENDING_CLAIM; 409 once claimed): its link stops working and the amount is unlocked (a key with the withdrawals scope)"
      )
      .annotate(AgentHints, { destructive: true })
  )
  .add(
    HttpApiEndpoint.post("claimLink", "/v1/refunds/:refund_id/claim-link")
      .setPath(Schema.Struct({ refund_id: Schema.String }))
      .addSuccess(Refund)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "A new claim_url for an unclaimed refund whose link was lost; the previous link stops working, the expiry stays (a key with the withdrawals scope)"
      )
      .annotate(AgentHints, { destructive: true })
  )
  .middleware(Authentication) {}

export class LedgerExportGroup extends HttpApiGroup.make("ledgerExport")
  .add(
    HttpApiEndpoint.get("export", "/v1/ledger-export")
      .setUrlParams(LedgerExportQuery)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/csv" }))
      .addError(Forbidden)
      .annotate(
        OpenApi.Summary,
        "Accounting export (a key with the read scope): every movement of this merchant's money in [from, to) — deposits, reversals, collections, withdrawals and their fees — one row per (transfer, account side) with the account's running balance, after each account's opening balance at from; streamed as CSV (default) or NDJSON (format=json)"
      )
      .annotate(
        OpenApi.Description,
        "from and to are RFC 3339 date-times with their offset (or dates: 00:00 UTC); to is exclusive; at most 366 days. Optional chain and currency keep one asset's accounts. CSV (text/csv, a header row): time, transfer_id, kind, reference, order_id, tx_hash, chain, currency, account, direction (credit/debit), amount (never negative, the asset's units), balance_after, counterparty; a cell that starts with = + - @, a tab or a carriage return is prefixed with an apostrophe. NDJSON (application/x-ndjson): one JSON object a line with the same keys, values as they are. Ordered by time, then transfer id, opening balances first (kind opening_balance). The body is streamed: a failure midway cuts the connection before the end of the chunked body. Exports take turns: a few stream at once per process, the others wait for theirs before any answer; one merchant has at most one streaming and one waiting (a third at once: 429 with Retry-After); when as many wait as the service lets wait, 503 with Retry-After. A client that reads far slower than the configured minimum pace (64 KiB/s by default) is cut off mid-body and its turn handed on."
      )
  )
  .middleware(Authentication) {}

export class PaymentLinksGroup extends HttpApiGroup.make("paymentLinks")
  .add(
    HttpApiEndpoint.post("create", "/v1/payment-links")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreatePaymentLinkRequest)
      .addSuccess(PaymentLink, { status: 201 })
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Create a reusable payment link (a key with the orders scope): a public page (`url`) where each visit creates a checkout order of its own, at a fixed `amount` or one the customer chooses within `min_amount`/`max_amount`; optional `max_uses` and `expires_at`. Idempotent with X-Service-Idempotency-Key"
      )
      .annotate(
        OpenApi.Description,
        "Assets are checked like an order's (live and enabled for the merchant, amounts at the asset's precision: 400), and again at each visit (an asset no longer live is left out). A use is a PAID order of the link, never a visit (unpaid, partially paid and expired orders are not uses); a link whose uses reached max_uses is `completed` and takes no more visits, while orders opened before then are honoured when paid (uses can then pass max_uses). The orders carry `payment_link_id`, the link's metadata, product, URLs and `order_expire_minutes`."
      )
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/payment-links")
      .setUrlParams(PaymentLinkListQuery)
      .addSuccess(PaymentLinkList)
      .annotate(
        OpenApi.Summary,
        "This merchant's payment links, newest first (limit/offset; active=true for those taking visits now, false for the others)"
      )
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/payment-links/:payment_link_id")
      .setPath(Schema.Struct({ payment_link_id: Schema.String }))
      .addSuccess(PaymentLink)
      .annotate(
        OpenApi.Summary,
        "One payment link: its status (active, inactive, completed, expired), uses, and totals (orders per status, final payments per asset)"
      )
  )
  .add(
    HttpApiEndpoint.post("deactivate", "/v1/payment-links/:payment_link_id/deactivate")
      .setPath(Schema.Struct({ payment_link_id: Schema.String }))
      .addSuccess(PaymentLink)
      .addError(Forbidden)
      .annotate(
        OpenApi.Summary,
        "Turn a payment link off for good (a key with the orders scope; idempotent): its page takes no more visits, its orders go on"
      )
      .annotate(AgentHints, { destructive: true, idempotent: true })
  )
  .add(
    HttpApiEndpoint.get("orders", "/v1/payment-links/:payment_link_id/orders")
      .setPath(Schema.Struct({ payment_link_id: Schema.String }))
      .setUrlParams(OrderListQuery)
      .addSuccess(OrderList)
      .annotate(
        OpenApi.Summary,
        "The orders a payment link created, newest first (page/size, status and chain filters)"
      )
  )
  .middleware(Authentication) {}

export class WithdrawalBatchesGroup extends HttpApiGroup.make("withdrawalBatches")
  .add(
    HttpApiEndpoint.post("create", "/v1/withdrawal-batches")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateWithdrawalBatchRequest)
      .addSuccess(WithdrawalBatch, { status: 201 })
      .addError(BatchInvalid)
      .addError(BatchForbidden)
      .addError(BatchConflict)
      .addError(Forbidden)
      .addError(Conflict)
      .annotate(
        OpenApi.Summary,
        "Request up to 500 withdrawals at once (a key with the withdrawals scope): admitted whole or refused whole, the sum locked, PENDING until the batch is approved once in the merchant console; then each item is sent as a withdrawal with its own terminal status and webhook. Idempotent with X-Service-Idempotency-Key"
      )
      .annotate(
        OpenApi.Description,
        "Each item is a CreateWithdrawalRequest with its own out_withdrawal_no. Every item is validated and quoted before anything is locked; a refusal names every refused item in `items` ({index, out_withdrawal_no, error}): 400 for items that cannot be withdrawn as asked (asset, precision, address, zero net, a reference repeated in the batch), 409 for references already used by the merchant's withdrawals, 403 when the withdrawal policy refuses items (address book, per-withdrawal limit) or an asset's total (the rolling 24 h limit counts the batch's total). 400 {error} when the available balance of an asset is less than the batch's total of it; 400 for more than 500 items. A batch is one decision: it needs the approvals one withdrawal of its total per asset would need (each asset's quorum_above tier applied to the sum of its items in that asset; required_approvals), judged again at each approval; the auto-approval policy does not apply to batches."
      )
      .annotate(
        AgentNote,
        `The batch is only requested: it stays PENDING, its sum locked, until a human approves it in the merchant console (never auto-approved), so tell your user it waits for their approval. ${AGENT_NEVER_APPROVES}`
      )
      .annotate(AgentHints, { destructive: true })
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/withdrawal-batches")
      .setUrlParams(WithdrawalBatchListQuery)
      .addSuccess(WithdrawalBatchList)
      .annotate(OpenApi.Summary, "This merchant's withdrawal batches, newest first (status filter, limit/offset)")
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/withdrawal-batches/:batch_id")
      .setPath(Schema.Struct({ batch_id: Schema.String }))
      .addSuccess(WithdrawalBatch)
      .annotate(
        OpenApi.Summary,
        "One batch: its status, totals per asset, item counts per withdrawal status, required_approvals and approvals so far"
      )
  )
  .add(
    HttpApiEndpoint.get("items", "/v1/withdrawal-batches/:batch_id/items")
      .setPath(Schema.Struct({ batch_id: Schema.String }))
      .setUrlParams(WithdrawalBatchItemsQuery)
      .addSuccess(WithdrawalList)
      .annotate(
        OpenApi.Summary,
        "A batch's items as withdrawals (each with batch_id), in the order they were asked for (status filter, limit/offset)"
      )
  )
  .middleware(Authentication) {}

/**
 * The public page of a payment link for paying customers: public HTML, not part of the `/v1` contract. Its
 * form posts the customer's amount and asset; the answer is a 303 to the new order's checkout page.
 */
export class PayGroup extends HttpApiGroup.make("pay")
  .add(
    HttpApiEndpoint.get("page", "/pay/:payment_link_id")
      .setPath(Schema.Struct({ payment_link_id: Schema.String }))
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html; charset=utf-8" }))
  )
  .add(
    HttpApiEndpoint.post("visit", "/pay/:payment_link_id")
      .setPath(Schema.Struct({ payment_link_id: Schema.String }))
      .setPayload(HttpApiSchema.withEncoding(PayForm, { kind: "UrlParams" }))
      .addSuccess(HttpApiSchema.Empty(303))
  )
  .add(
    HttpApiEndpoint.get("stylesheet", "/pay-assets/pay.css").addSuccess(
      HttpApiSchema.Text({ contentType: "text/css; charset=utf-8" })
    )
  )
  .annotate(OpenApi.Exclude, true) {}

/** The hosted checkout page for paying customers: public HTML, not part of the `/v1` contract. */
export class CheckoutGroup extends HttpApiGroup.make("checkout")
  .add(
    HttpApiEndpoint.get("page", "/checkout/:order_id")
      .setPath(Schema.Struct({ order_id: Schema.String }))
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html; charset=utf-8" }))
  )
  .add(
    HttpApiEndpoint.get("status", "/checkout/:order_id/status")
      .setPath(Schema.Struct({ order_id: Schema.String }))
      .addSuccess(CheckoutStatus)
  )
  .add(
    HttpApiEndpoint.get("script", "/checkout-assets/checkout.js").addSuccess(
      HttpApiSchema.Text({ contentType: "text/javascript; charset=utf-8" })
    )
  )
  .add(
    HttpApiEndpoint.get("stylesheet", "/checkout-assets/checkout.css").addSuccess(
      HttpApiSchema.Text({ contentType: "text/css; charset=utf-8" })
    )
  )
  .annotate(OpenApi.Exclude, true) {}

export class FacetApi extends HttpApi.make("facet")
  .add(SystemGroup)
  .add(DeveloperGroup)
  .add(OnboardingGroup)
  .add(WalletAssetsGroup)
  .add(OrdersGroup)
  .add(DepositAddressesGroup)
  .add(TransactionsGroup)
  .add(WithdrawalsGroup)
  .add(WithdrawalBatchesGroup)
  .add(RefundsGroup)
  .add(LedgerExportGroup)
  .add(CheckoutGroup)
  .add(PaymentLinksGroup)
  .add(PayGroup)
  .addError(BadRequest)
  .addError(NotFound)
  .addError(MethodNotAllowed)
  .addError(PayloadTooLarge)
  .addError(UnsupportedMediaType)
  .addError(RateLimited)
  .addError(Internal)
  .addError(ServiceUnavailable)
  .annotate(OpenApi.Title, "Facet merchant wallet, checkout, deposit-address and withdrawal API")
  .annotate(OpenApi.Version, CONTRACT_VERSION)
  .annotate(
    OpenApi.Description,
    "Custodial crypto payments on TRON, BNB Smart Chain and Solana. Amounts are decimal strings. Errors are {error: string}."
  ) {}
