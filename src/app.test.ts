import type { Sharding } from "@effect/cluster"
import type { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import type { Layer } from "effect"
import { AddressBook } from "../custody/address-book.js"
import { Collections } from "../custody/collections.js"
import { ConsoleUsers } from "../custody/console-users.js"
import type { CustodyConfig } from "../custody/custody-config.js"
import { CustodyBooks } from "../custody/custody-books.js"
import { CustodyHealth } from "../custody/custody-health.js"
import { EnergySource } from "../custody/energy.js"
import { EnergyReadings } from "../custody/energy-readings.js"
import { GasWallets } from "../custody/gas-wallets.js"
import { MainDeposits } from "../custody/native-consolidation.js"
import { TransferSender } from "../custody/transfer-sender.js"
import type { OperationHandOff } from "../custody/engine/operation-hand-off.js"
import { Operations } from "../custody/engine/operations.js"
import { WalletActors } from "../custody/engine/wallet-actor.js"
import { GasFunding } from "../custody/gas-funding.js"
import { SweepDriver } from "../custody/sweep-driver.js"
import { WithdrawalDriver } from "../custody/withdrawal-driver.js"
import { WalletPortfolioViews } from "../custody/wallet-portfolio.js"
import { WithdrawalDecisions } from "../custody/withdrawal-decisions.js"
import { WithdrawalBatches } from "../custody/withdrawal-batches.js"
import { WithdrawalPolicy } from "../custody/withdrawal-policy.js"
import { Withdrawals } from "../custody/withdrawals.js"
import { RefundEvents } from "../custody/refund-events.js"
import { Refunds } from "../custody/refunds.js"
import { RateLimiter } from "../http/rate-limiter.js"
import { AttributionStore } from "../indexer/attribution-store.js"
import { Reconciliation } from "../indexer/reconciliation.js"
import { AssetCatalog } from "./assets/asset-catalog.js"
import type { ChainSettings } from "./assets/chain-settings.js"
import { AuditLog } from "./audit/audit-log.js"
import type { ChainClients } from "./chains/chain-clients.js"
import type { ChainEndpoints } from "./chains/chain-endpoints.js"
import type { AppConfig } from "./config.js"
import { ConsoleAccounts } from "./console/console-accounts.js"
import { SignInThrottle } from "./console/sign-in-throttle.js"
import { DepositAddresses } from "./deposits/deposit-addresses.js"
import { Idempotency } from "./idempotency.js"
import type { IndexerStatus } from "./indexing/indexer-status.js"
import type { SecretBox } from "./keys/secret-box.js"
import type { Signer } from "./keys/signer.js"
import { Ledger } from "./ledger/ledger.js"
import { ApiKeys } from "./merchants/api-keys.js"
import { Onboarding } from "./merchants/onboarding.js"
import { Checkout } from "./orders/checkout.js"
import { Orders } from "./orders/orders.js"
import { PaymentLinks } from "./payment-links/payment-links.js"
import { UnderpaymentTolerances } from "./orders/underpayment-tolerance.js"
import { LedgerExports } from "./ledger/ledger-export.js"
import { ExportTurns } from "./ledger/export-turns.js"
import type { PolicyClock } from "./policy-clock.js"
import { Readiness } from "./readiness.js"
import { AssetStore } from "./stores/asset-store.js"
import { AuditStore } from "./stores/audit-store.js"
import { ChainIdentityStore } from "./stores/chain-identity-store.js"
import { ConsoleStore } from "./stores/console-store.js"
import { CustodyStore } from "./stores/custody-store.js"
import { IdempotencyStore } from "./stores/idempotency-store.js"
import { IndexerStore } from "./stores/indexer-store.js"
import { LedgerStore } from "./stores/ledger-store.js"
import { MerchantStore } from "./stores/merchant-store.js"
import { OrderStore } from "./stores/order-store.js"
import { PaymentLinkStore } from "./stores/payment-link-store.js"
import { ReconciliationStore } from "./stores/reconciliation-store.js"
import { RefundStore } from "./stores/refund-store.js"
import { TransactionStore } from "./stores/transaction-store.js"
import { UntracedBlockStore } from "./stores/untraced-block-store.js"
import { WalletStore } from "./stores/wallet-store.js"
import { WebhookStore } from "./stores/webhook-store.js"
import { WithdrawalStore } from "./stores/withdrawal-store.js"
import { WithdrawalBatchStore } from "./stores/withdrawal-batch-store.js"
import { Transactions } from "./transactions/transactions.js"
import { Wallets } from "./wallets/wallets.js"
import { WebhookOutbox } from "./webhooks/outbox.js"
import { WebhookAdmin } from "./webhooks/webhook-admin.js"
import { PRODUCTION_FOLDERS, productionFiles, sourceOf } from "../test/source-files.js"

/**
 * What the environment decides, provided once by the composition root (`src/app.ts`) or by a test or an
 * operator command in its place: the database, configuration, chains, keys, the policy clock, the cluster,
 * and the per-process indexer status. Every other requirement of a service is another service, which it
 * names in its own `dependencies`.
 */
type Ports =
  | SqlClient.SqlClient
  // the same database as a PostgreSQL client (what COPY streams need)
  | PgClient.PgClient
  | AppConfig
  | ChainEndpoints
  | ChainClients
  | ChainSettings
  | CustodyConfig
  | Signer
  | SecretBox
  | PolicyClock
  | Sharding.Sharding
  // whether this process hands an approval's operations to the wallet actors itself (the service) or leaves
  // them to the running service's resume pass (an operator command, which runs no cluster)
  | OperationHandOff
  | IndexerStatus

/** Compiles only when the layer needs nothing but ports: `npm test` typechecks this file. */
const selfContained = <A, E, R extends Ports>(layer: Layer.Layer<A, E, R>) => layer

/** Every `Effect.Service` of the production code, its `.Default` checked by the compiler above. */
const SERVICES = {
  AddressBook: selfContained(AddressBook.Default),
  ApiKeys: selfContained(ApiKeys.Default),
  AssetCatalog: selfContained(AssetCatalog.Default),
  AssetStore: selfContained(AssetStore.Default),
  AttributionStore: selfContained(AttributionStore.Default),
  AuditLog: selfContained(AuditLog.Default),
  AuditStore: selfContained(AuditStore.Default),
  ChainIdentityStore: selfContained(ChainIdentityStore.Default),
  Checkout: selfContained(Checkout.Default),
  Collections: selfContained(Collections.Default),
  ConsoleAccounts: selfContained(ConsoleAccounts.Default),
  ConsoleStore: selfContained(ConsoleStore.Default),
  ConsoleUsers: selfContained(ConsoleUsers.Default),
  CustodyBooks: selfContained(CustodyBooks.Default),
  CustodyHealth: selfContained(CustodyHealth.Default),
  CustodyStore: selfContained(CustodyStore.Default),
  DepositAddresses: selfContained(DepositAddresses.Default),
  EnergyReadings: selfContained(EnergyReadings.Default),
  EnergySource: selfContained(EnergySource.Default),
  ExportTurns: selfContained(ExportTurns.Default),
  GasFunding: selfContained(GasFunding.Default),
  GasWallets: selfContained(GasWallets.Default),
  Idempotency: selfContained(Idempotency.Default),
  IdempotencyStore: selfContained(IdempotencyStore.Default),
  IndexerStore: selfContained(IndexerStore.Default),
  Ledger: selfContained(Ledger.Default),
  LedgerExports: selfContained(LedgerExports.Default),
  LedgerStore: selfContained(LedgerStore.Default),
  MainDeposits: selfContained(MainDeposits.Default),
  MerchantStore: selfContained(MerchantStore.Default),
  Onboarding: selfContained(Onboarding.Default),
  Operations: selfContained(Operations.Default),
  OrderStore: selfContained(OrderStore.Default),
  Orders: selfContained(Orders.Default),
  PaymentLinks: selfContained(PaymentLinks.Default),
  PaymentLinkStore: selfContained(PaymentLinkStore.Default),
  RateLimiter: selfContained(RateLimiter.Default),
  Readiness: selfContained(Readiness.Default),
  Reconciliation: selfContained(Reconciliation.Default),
  ReconciliationStore: selfContained(ReconciliationStore.Default),
  RefundEvents: selfContained(RefundEvents.Default),
  RefundStore: selfContained(RefundStore.Default),
  Refunds: selfContained(Refunds.Default),
  SignInThrottle: selfContained(SignInThrottle.Default),
  SweepDriver: selfContained(SweepDriver.Default),
  TransactionStore: selfContained(TransactionStore.Default),
  Transactions: selfContained(Transactions.Default),
  TransferSender: selfContained(TransferSender.Default),
  UnderpaymentTolerances: selfContained(UnderpaymentTolerances.Default),
  UntracedBlockStore: selfContained(UntracedBlockStore.Default),
  WalletActors: selfContained(WalletActors.Default),
  WalletPortfolioViews: selfContained(WalletPortfolioViews.Default),
  WalletStore: selfContained(WalletStore.Default),
  Wallets: selfContained(Wallets.Default),
  WebhookAdmin: selfContained(WebhookAdmin.Default),
  WebhookOutbox: selfContained(WebhookOutbox.Default),
  WebhookStore: selfContained(WebhookStore.Default),
  WithdrawalDecisions: selfContained(WithdrawalDecisions.Default),
  WithdrawalDriver: selfContained(WithdrawalDriver.Default),
  WithdrawalBatches: selfContained(WithdrawalBatches.Default),
  WithdrawalBatchStore: selfContained(WithdrawalBatchStore.Default),
  WithdrawalPolicy: selfContained(WithdrawalPolicy.Default),
  WithdrawalStore: selfContained(WithdrawalStore.Default),
  Withdrawals: selfContained(Withdrawals.Default)
}

const sources = PRODUCTION_FOLDERS.flatMap((folder) => productionFiles(folder)).map((file) => ({
  file,
  text: sourceOf(file)
}))

describe("the composition root", () => {
  it("every service is listed above, so the compiler checks it brings its own dependencies", () => {
    const declared = sources.flatMap(({ text }) =>
      [...text.matchAll(/class (\w+) extends Effect\.Service/g)].flatMap((m) => (m[1] === undefined ? [] : [m[1]]))
    )
    expect([...declared].sort()).toEqual(Object.keys(SERVICES).sort())
  })

  it("one layer naming convention: X.Default for a service, XLive (or makeXLive) for every other layer", () => {
    const offenders = sources.flatMap(({ file, text }) => [
      // a layer hung on a class as a static (`.layer`, `.System`) instead of a named XLive
      ...[...text.matchAll(/static readonly (\w+) = (?:\w+\.)*(?:Layer|layer)\b/g)].map((m) => `${file}: ${m[1]}`),
      // an exported layer whose name does not end in Live
      ...[...text.matchAll(/export const (\w+)\s*(?::[^=]+)?=\s*(?:Layer\.\w+\(|\w+\.pipe\(\s*Layer\.)/g)].flatMap(
        (m) => (m[1] === undefined || m[1].endsWith("Live") ? [] : [`${file}: ${m[1]}`])
      )
    ])
    expect(offenders).toEqual([])
  })
})
