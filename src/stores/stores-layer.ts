import { Layer } from "effect"
import { AssetStore } from "./asset-store.js"
import { AuditStore } from "./audit-store.js"
import { ChainIdentityStore } from "./chain-identity-store.js"
import { ConsoleStore } from "./console-store.js"
import { CustodyStore } from "./custody-store.js"
import { IdempotencyStore } from "./idempotency-store.js"
import { IndexerStore } from "./indexer-store.js"
import { LedgerStore } from "./ledger-store.js"
import { MerchantStore } from "./merchant-store.js"
import { OrderStore } from "./order-store.js"
import { PaymentLinkStore } from "./payment-link-store.js"
import { ReconciliationStore } from "./reconciliation-store.js"
import { RefundStore } from "./refund-store.js"
import { TransactionStore } from "./transaction-store.js"
import { UntracedBlockStore } from "./untraced-block-store.js"
import { WalletStore } from "./wallet-store.js"
import { WebhookStore } from "./webhook-store.js"
import { WithdrawalStore } from "./withdrawal-store.js"
import { WithdrawalBatchStore } from "./withdrawal-batch-store.js"

/**
 * Every table family's store over the database (each needs only `SqlClient`): provided once beneath every
 * service, by the composition root and by the operator commands.
 */
export const StoresLive = Layer.mergeAll(
  AssetStore.Default,
  AuditStore.Default,
  ChainIdentityStore.Default,
  ConsoleStore.Default,
  CustodyStore.Default,
  IdempotencyStore.Default,
  IndexerStore.Default,
  LedgerStore.Default,
  MerchantStore.Default,
  OrderStore.Default,
  PaymentLinkStore.Default,
  ReconciliationStore.Default,
  RefundStore.Default,
  TransactionStore.Default,
  UntracedBlockStore.Default,
  WalletStore.Default,
  WebhookStore.Default,
  WithdrawalStore.Default,
  WithdrawalBatchStore.Default
)
