import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import { ChainIdentityStore } from "../stores/chain-identity-store.js"
import { CustodyStore } from "../stores/custody-store.js"
import { OrderStore } from "../stores/order-store.js"
import { RefundStore } from "../stores/refund-store.js"
import { WebhookStore } from "../stores/webhook-store.js"
import { WithdrawalStore } from "../stores/withdrawal-store.js"
import { WithdrawalBatchStore } from "../stores/withdrawal-batch-store.js"
import { IdempotencyStore } from "../stores/idempotency-store.js"
import { IndexerStore } from "../stores/indexer-store.js"
import { LedgerStore } from "../stores/ledger-store.js"
import { TransactionStore } from "../stores/transaction-store.js"
import { devnetStatePaths } from "./devnets.js"

export class DevnetResetRefused extends Schema.TaggedError<DevnetResetRefused>()("DevnetResetRefused", {
  message: Schema.String
}) {}

/** How many rows of each kind a reset removed (orders are put back to unpaid, not removed). */
export interface DevnetResetCounts {
  readonly transactions: number
  readonly ledgerTransfers: number
  readonly webhookEvents: number
  readonly ordersUnpaid: number
  readonly chains: number
}

/**
 * A clean slate for the devnets: in one transaction, every row that records money on their chains
 * (transactions, the ledger and its balances, chain webhook events, indexer cursors and chain
 * identities) goes, and orders are back to unpaid; then the kept chains themselves are deleted, so the
 * next start makes new ones. Merchants, keys, wallets, deposit addresses and orders stay: addresses come
 * from the master seed, not from a chain. Refused unless every chain the database knows is a devnet.
 */
export const resetDevnets = Effect.fn("resetDevnets")(function* (dataDir: string) {
  const sql = yield* SqlClient.SqlClient
  const identities = yield* ChainIdentityStore
  const idempotency = yield* IdempotencyStore
  const indexers = yield* IndexerStore
  const ledger = yield* LedgerStore
  const transactionStore = yield* TransactionStore
  const webhooks = yield* WebhookStore
  const custody = yield* CustodyStore
  const withdrawals = yield* WithdrawalStore
  const batches = yield* WithdrawalBatchStore
  const orders = yield* OrderStore
  const refunds = yield* RefundStore
  const counts = yield* sql.withTransaction(
    Effect.gen(function* () {
      const real = (yield* identities.all).filter((identity) => identity.network !== "devnet")
      if (real.length > 0) {
        return yield* new DevnetResetRefused({
          message: `this database indexes ${real.map((r) => r.chain).join(", ")} on a real network: a devnet reset never touches it`
        })
      }
      const ledgerTransfers = yield* ledger.forgetAll
      const webhookEvents = yield* webhooks.forgetChainEvents
      const transactions = yield* transactionStore.forgetAll
      // custody's operations, their signed transactions and nonces belong to the chains that go
      // withdrawals were paid from those chains' balances: they go with the ledger (and their idempotency keys),
      // and so do the refunds of the payments that go (a withdrawal's removal unlinks its refund first)
      yield* custody.forgetAll(
        Effect.all([
          withdrawals.forgetAll,
          batches.forgetAll,
          refunds.forgetAll,
          idempotency.forgetEndpoint("POST /v1/withdrawals"),
          idempotency.forgetEndpoint("POST /v1/withdrawal-batches"),
          idempotency.forgetEndpoint("POST /v1/orders/{order_id}/refunds")
        ])
      )
      // and so do the wallet actors' messages (the cluster's own tables, made at its first start)
      for (const table of ["cluster_replies", "cluster_messages"]) {
        const [exists] = yield* sql<{ found: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS found`
        if (exists?.found === true) yield* sql`DELETE FROM ${sql(table)}`
      }
      const ordersUnpaid = yield* orders.resetToUnpaid
      yield* indexers.forgetAll
      const chains = yield* identities.forgetAll
      return { transactions, ledgerTransfers, webhookEvents, ordersUnpaid, chains } satisfies DevnetResetCounts
    })
  )
  yield* Effect.sync(() => fs.rmSync(devnetStatePaths(dataDir).dir, { recursive: true, force: true }))
  return counts
})
