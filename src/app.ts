import { Effect, Layer } from "effect"
import { AutoSweepLive, Collections } from "../custody/collections.js"
import { CustodyConfigLive } from "../custody/custody-config.js"
import { makeOperationDriversLive } from "../custody/engine/operation-driver.js"
import { OperationHandOffLive } from "../custody/engine/operation-hand-off.js"
import { CustodyResumeLive, CustodyWalletLive } from "../custody/engine/operations-engine.js"
import { GasFunding } from "../custody/gas-funding.js"
import { SweepDriver } from "../custody/sweep-driver.js"
import { WithdrawalDriver } from "../custody/withdrawal-driver.js"
import { NativeConsolidationLive } from "../custody/native-consolidation.js"
import { Withdrawals } from "../custody/withdrawals.js"
import { RefundExpiryLive, Refunds } from "../custody/refunds.js"
import { WithdrawalDecisions, WithdrawalExpiryLive } from "../custody/withdrawal-decisions.js"
import { WithdrawalBatches, WithdrawalBatchExpiryLive } from "../custody/withdrawal-batches.js"
import { AddressBook } from "../custody/address-book.js"
import { PolicySettleLive, WithdrawalPolicy } from "../custody/withdrawal-policy.js"
import { AuditLog } from "./audit/audit-log.js"
import { ConsoleUsers } from "../custody/console-users.js"
import { type PolicyClock, SystemClockLive } from "./policy-clock.js"
import { Checkout } from "./orders/checkout.js"
import { ConsoleAccounts } from "./console/console-accounts.js"
import { EnergySource } from "../custody/energy.js"
import { EnergyReadings, EnergyReadingsRefreshLive } from "../custody/energy-readings.js"
import { GasWallets, GasWalletsRefreshLive } from "../custody/gas-wallets.js"
import { CustodyHealth } from "../custody/custody-health.js"
import { WalletPortfolioViews } from "../custody/wallet-portfolio.js"
import { IndexerStatusLive } from "./indexing/indexer-status.js"
import { IndexersLive } from "../indexer/indexers.js"
import { Reconciliation, ReconciliationLive } from "../indexer/reconciliation.js"
import { AssetCatalog } from "./assets/asset-catalog.js"
import { Transactions } from "./transactions/transactions.js"
import { ChainSettingsLive } from "./assets/chain-settings.js"
import { ChainClientsLive } from "./chains/chain-clients.js"
import { type ChainEndpoints, MainnetEndpointsLive } from "./chains/chain-endpoints.js"
import { AppConfig } from "./config.js"
import { StoresLive } from "./stores/stores-layer.js"
import { ClusterLive } from "./cluster.js"
import { DevnetsLive } from "./devnet/devnets.js"
import { DepositAddresses } from "./deposits/deposit-addresses.js"
import { MasterSeedLive } from "./keys/master-seed.js"
import { LocalSignerLive } from "./keys/signer.js"
import { SecretBoxLive } from "./keys/secret-box.js"
import { SealSecretsLive } from "./keys/sealed-secrets.js"
import { OrderExpiryLive } from "./orders/order-expiry.js"
import { UnderpaymentTolerances } from "./orders/underpayment-tolerance.js"
import { LedgerExports } from "./ledger/ledger-export.js"
import { Orders } from "./orders/orders.js"
import { PaymentLinks } from "./payment-links/payment-links.js"
import { WebhookDispatcherLive, WebhookHttpClientLive } from "./webhooks/dispatcher.js"
import { WebhookAdmin } from "./webhooks/webhook-admin.js"
import { DatabaseLive } from "./database/database.js"
import { runMigrations } from "./database/migrator.js"
import { ApiKeys } from "./merchants/api-keys.js"
import { Onboarding } from "./merchants/onboarding.js"
import { Readiness } from "./readiness.js"
import { Ledger } from "./ledger/ledger.js"
import { Wallets } from "./wallets/wallets.js"
import { WebhookOutbox } from "./webhooks/outbox.js"
import { TransferSender } from "../custody/transfer-sender.js"
import { AttributionStore } from "../indexer/attribution-store.js"

/**
 * The composition root: every service and the order they start in. The database comes up (embedded or
 * DATABASE_URL) and is migrated before any service or the HTTP server is built.
 */
const MigrationsLive = Layer.effectDiscard(
  Effect.gen(function* () {
    yield* runMigrations()
    yield* Effect.flatMap(Readiness, (readiness) => readiness.mark("migrations", "ok"))
  })
)

/** Keys: the master seed stays inside the signer and the secret box (sealing stored secrets). */
const KeysLive = Layer.merge(LocalSignerLive, SecretBoxLive).pipe(Layer.provide(MasterSeedLive))

/**
 * The driver of each custody operation kind, the one place they are wired: the wallet actors run an
 * operation with its kind's driver (custody/engine/). A new kind gets its driver here.
 */
const OperationDriversLive = makeOperationDriversLive(
  Effect.all([
    // collection, account_close
    SweepDriver,
    // gas_funding
    Effect.map(GasFunding, (gasFunding) => gasFunding.driver),
    // withdrawal: a single one, a batch's item, a refund's payout
    WithdrawalDriver,
    // the stake's operations: energy lendings and their takings-back, stakes and unstakes
    Effect.map(EnergySource, (energy) => energy.driver)
  ])
).pipe(Layer.provide([SweepDriver.Default, GasFunding.Default, WithdrawalDriver.Default, EnergySource.Default]))

/** The chains: the devnets (default) or the real networks of FACET_NETWORK=mainnet. */
export const NetworkLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => (config.network === "devnet" ? DevnetsLive : MainnetEndpointsLive))
)

/**
 * Everything but the HTTP server, over the given chain endpoints (tests may pass fixed ones that no
 * node serves, and a policy clock they move); needs `AppConfig`.
 */
export const makeCoreLive = <E, R>(
  network: Layer.Layer<ChainEndpoints, E, R>,
  clock: Layer.Layer<PolicyClock> = SystemClockLive
) =>
  Layer.mergeAll(
    // what runs in the background
    OrderExpiryLive,
    WebhookDispatcherLive,
    IndexersLive,
    ReconciliationLive,
    CustodyWalletLive,
    CustodyResumeLive,
    GasWalletsRefreshLive,
    EnergyReadingsRefreshLive,
    AutoSweepLive,
    WithdrawalExpiryLive,
    WithdrawalBatchExpiryLive,
    PolicySettleLive,
    NativeConsolidationLive,
    RefundExpiryLive,
    // what the API and the console call (each brings its own dependencies)
    Onboarding.Default,
    ApiKeys.Default,
    AssetCatalog.Default,
    Orders.Default,
    Checkout.Default,
    PaymentLinks.Default,
    UnderpaymentTolerances.Default,
    LedgerExports.Default,
    DepositAddresses.Default,
    Transactions.Default,
    WalletPortfolioViews.Default,
    Collections.Default,
    Withdrawals.Default,
    WithdrawalDecisions.Default,
    WithdrawalBatches.Default,
    WithdrawalPolicy.Default,
    Refunds.Default,
    AddressBook.Default,
    WebhookAdmin.Default,
    ConsoleAccounts.Default,
    ConsoleUsers.Default,
    CustodyHealth.Default,
    Reconciliation.Default,
    AuditLog.Default,
    // what the indexers, custody and the tests reach directly
    AttributionStore.Default,
    Wallets.Default,
    Ledger.Default,
    WebhookOutbox.Default,
    GasWallets.Default,
    EnergySource.Default,
    EnergyReadings.Default,
    TransferSender.Default
  ).pipe(
    // the wallet actors' drivers, and how an approval's operations reach the actors (by message, at once)
    Layer.provideMerge(Layer.merge(OperationDriversLive, OperationHandOffLive)),
    // what the environment decides: chains, keys, clock, cluster, configuration read once
    Layer.provideMerge(
      Layer.mergeAll(
        ChainSettingsLive,
        ChainClientsLive,
        CustodyConfigLive,
        ClusterLive,
        IndexerStatusLive,
        WebhookHttpClientLive
      )
    ),
    Layer.provideMerge(clock),
    Layer.provideMerge(network),
    Layer.provideMerge(SealSecretsLive),
    Layer.provideMerge(KeysLive),
    // the database, migrated before anything above is built, and the stores over it
    Layer.provideMerge(MigrationsLive),
    Layer.provideMerge(StoresLive),
    Layer.provideMerge(Readiness.Default),
    Layer.provideMerge(DatabaseLive)
  )

export const CoreLive = makeCoreLive(NetworkLive)
