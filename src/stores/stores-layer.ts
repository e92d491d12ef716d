import { Layer } from "effect"
import { AuditStore } from "./audit-store.js"
import { ChainIdentityStore } from "./chain-identity-store.js"
import { ConsoleStore } from "./console-store.js"
import { CustodyStore } from "./custody-store.js"
import { IdempotencyStore } from "./idempotency-store.js"
import { IndexerStore } from "./indexer-store.js"
import { WithdrawalStore } from "./withdrawal-store.js"

/**
 * Every table family's store over the database (each needs only `SqlClient`): provided once beneath every
 * service, by the composition root and by the operator commands.
 */
export const StoresLive = Layer.mergeAll(
  AuditStore.Default,
  ChainIdentityStore.Default,
  ConsoleStore.Default,
  CustodyStore.Default,
  IdempotencyStore.Default,
  IndexerStore.Default,
  WithdrawalStore.Default
)
