import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Schema } from "effect"
import { type Chain, NATIVE_ASSETS } from "../src/domain/chain.js"
import { Accounts, Ledger, type LedgerTransfer } from "../src/ledger/ledger.js"
import { CustodyStore, type OperationRow, type OperationType } from "../src/stores/custody-store.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { isFinished } from "./custody-operation.js"
import type { SendOutcome } from "./transfer-sender.js"

/** PostgreSQL chose this transaction to break a deadlock: nothing of it was written, and it may run again. */
const isDeadlock = (error: SqlError) => Schema.is(Schema.Struct({ code: Schema.Literal("40P01") }))(error.cause)

/** Whether an asset is its chain's native coin (TRX, BNB, SOL). */
export const isNative = (asset: { readonly chain: Chain; readonly currency: string }) =>
  NATIVE_ASSETS[asset.chain].currency === asset.currency

/** TRON's stake (for energy, for bandwidth) and the energy it lends: the platform's own operations. */
export const STAKE_OPERATIONS = [
  "energy_delegation",
  "energy_reclaim",
  "energy_stake",
  "energy_unstake",
  "bandwidth_stake",
  "bandwidth_unstake"
] as const satisfies ReadonlyArray<OperationType>
export type StakeOperation = (typeof STAKE_OPERATIONS)[number]
export const isStakeOperation = (
  operation: OperationRow
): operation is OperationRow & { readonly type: StakeOperation } =>
  STAKE_OPERATIONS.some((type) => type === operation.type)

/** What a final Solana token transfer waits for before it is booked (the rent it paid, if any). */
export const RENT_UNKNOWN = "the node's balances of its final transaction (the rent it paid, if any); resumed later"

/**
 * Solana: the rent the gas wallet (the fee payer) paid in a final token transfer for the recipient's token
 * account it made, from the chain's balances, not from what was signed: transfers signed before the first
 * of them lands each count the rent, and only the one that lands first pays it. Undefined: the node's
 * lookup has not said yet (nothing is booked on a guess).
 */
export const rentOf = (
  operation: OperationRow,
  outcome: Extract<SendOutcome, { readonly _tag: "Final" }>
): ReadonlyArray<LedgerTransfer> | undefined => {
  if (outcome.payerSpent === undefined) return undefined
  const rent = outcome.payerSpent - outcome.fee
  return rent <= 0n
    ? []
    : [
        {
          debit: Accounts.gas,
          credit: Accounts.chain,
          chain: operation.chain,
          currency: NATIVE_ASSETS[operation.chain].currency,
          amount: rent,
          kind: "rent",
          reference: operation.id
        }
      ]
}

/** The operations the platform does for itself (gas fundings, its stake): their fees are its gas. */
const platformPays = (operation: OperationRow) => operation.type === "gas_funding" || isStakeOperation(operation)

/**
 * How a custody operation ends in the books: COMPLETED with its ledger transfers, or FAILED with the fee a
 * transaction reverted on chain still burned — each in one database transaction with whatever completes
 * with it (a withdrawal's status and webhook), and each a no-op on an operation already finished.
 */
export class CustodyBooks extends Effect.Service<CustodyBooks>()("facet/CustodyBooks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* CustodyStore
    const ledger = yield* Ledger
    const transactionStore = yield* TransactionStore

    /**
     * The network fee as a ledger transfer from whoever paid it: the gas wallet (a gas funding, the energy
     * the platform lends and its stake, any Solana transfer: it is the fee payer), the coins moved (a native
     * sweep: uncollected; a native withdrawal: locked), or the gas parked at the sending wallet (a token sweep
     * or withdrawal on TRON and BEP20).
     */
    const networkFee = (operation: OperationRow, fee: bigint): LedgerTransfer => ({
      debit:
        platformPays(operation) || operation.chain === "SOLANA" || operation.merchant_id === null
          ? Accounts.gas
          : isNative(operation)
            ? operation.type === "withdrawal"
              ? Accounts.locked(operation.merchant_id)
              : Accounts.uncollected(operation.merchant_id, operation.wallet_id)
            : Accounts.gasAt(operation.wallet_id),
      credit: Accounts.chain,
      chain: operation.chain,
      currency: NATIVE_ASSETS[operation.chain].currency,
      amount: fee,
      kind: "network_fee",
      reference: operation.id
    })

    /**
     * Completes an operation whose transfer is final, in one database transaction: the attempt, the
     * `transactions` row, the ledger transfers and the status. Run twice (a crash before the commit, a
     * redelivered message), the second run finds it COMPLETED and does nothing.
     */
    const finish = (
      operation: OperationRow,
      outcome: {
        readonly txHash: string
        readonly fee: bigint
        readonly blockNumber: bigint
        readonly confirmations: number
      },
      transfers: ReadonlyArray<LedgerTransfer>,
      // what else completes with it (a withdrawal's status and webhook), in the same transaction
      also: Effect.Effect<void, SqlError> = Effect.void
    ) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const locked = yield* store.lockOperation(operation.id)
            if (isFinished(locked.status)) return
            yield* store.markAttempt(operation.chain, outcome.txHash, "final", {
              blockNumber: outcome.blockNumber,
              fee: outcome.fee
            })
            yield* transactionStore.confirmCustodyRow(operation.chain, outcome.txHash, outcome)
            yield* ledger.post(transfers)
            yield* store.complete(operation.id)
            yield* also
            yield* Effect.logInfo(
              `custody ${operation.id}: ${operation.type} final in ${operation.chain} block ${outcome.blockNumber} (${outcome.txHash})`
            )
          })
        )
        .pipe(Effect.retry({ while: isDeadlock, times: 3 }), Effect.orDie)

    /** FAILED, and the fee a transaction reverted on chain still burned, in one database transaction. */
    const failed = (
      operation: OperationRow,
      outcome: { readonly reason: string; readonly burned: bigint },
      also: Effect.Effect<void, SqlError> = Effect.void
    ) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const locked = yield* store.lockOperation(operation.id)
            if (isFinished(locked.status)) return
            yield* store.fail(operation.id, outcome.reason)
            yield* ledger.post([networkFee(operation, outcome.burned)])
            yield* also
            yield* Effect.logWarning(`custody ${operation.id}: ${operation.type} FAILED: ${outcome.reason}`)
          })
        )
        .pipe(Effect.retry({ while: isDeadlock, times: 3 }), Effect.orDie)

    return { networkFee, finish, failed } as const
  }),
  dependencies: [CustodyStore.Default, Ledger.Default, TransactionStore.Default]
}) {}
