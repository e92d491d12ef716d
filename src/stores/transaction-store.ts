import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { Chain } from "../domain/chain.js"
import { Transaction } from "../domain/transaction.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/**
 * A `transactions` row: every on-chain movement a merchant sees (deposits the indexers found, custody's
 * sweeps, gas fundings and withdrawals). One schema and one column list for every reader.
 */
export const TransactionRow = Schema.Struct({
  id: Schema.String,
  merchant_id: Schema.String,
  type: Transaction.fields.type,
  status: Transaction.fields.status,
  chain: Chain,
  currency: Schema.String,
  amount: Schema.String,
  tx_hash: Schema.String,
  event_index: Schema.Number,
  from_address: Schema.NullOr(Schema.String),
  to_address: Schema.String,
  block_number: Schema.NullOr(Schema.String),
  confirmations: Schema.Number,
  wallet_id: Schema.NullOr(Schema.String),
  order_id: Schema.NullOr(Schema.String),
  deposit_address_id: Schema.NullOr(Schema.String),
  withdrawal_id: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String),
  /** Whether a payment to an order counts toward it (its asset is one the order accepts). */
  counted: Schema.Boolean,
  /** A payment's value in its order's currency. */
  order_value: Schema.NullOr(Schema.String),
  confirmed_at: Schema.NullOr(Schema.DateFromSelf),
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
export type TransactionRow = typeof TransactionRow.Type
export const decodeTransactionRows = Schema.decodeUnknown(Schema.Array(TransactionRow))

/** The columns of `TransactionRow`, for a SELECT or a RETURNING over `transactions` or a CTE of its rows. */
export const TRANSACTION_COLUMNS =
  "id, merchant_id, type, status, chain, currency, amount::text AS amount, tx_hash, event_index, from_address, to_address, block_number::text AS block_number, confirmations, wallet_id, order_id, deposit_address_id, withdrawal_id, operation_id, counted, order_value::text AS order_value, confirmed_at, created_at, updated_at"

/** The latest payment of an order as its checkout page shows it. */
const LatestPayment = Schema.Struct({
  tx_hash: Schema.String,
  chain: Chain,
  currency: Schema.String,
  amount: Schema.String,
  status: Schema.String,
  block_number: Schema.NullOr(Schema.String)
})
export type LatestPayment = typeof LatestPayment.Type
const Total = Schema.Struct({ total: Schema.NumberFromString })
const Block = Schema.Struct({ block: Schema.NullOr(Schema.BigInt) })
const Count = Schema.Struct({ n: Schema.Number })
/** A payment as an order's settlement weighs it: in its asset, pending or confirmed, with its block's time. */
const SettlementPayment = Schema.Struct({
  chain: Schema.String,
  currency: Schema.String,
  amount: Schema.String,
  status: Schema.Literal("pending", "confirmed"),
  block_time: Schema.NullOr(Schema.DateFromSelf),
  tx_hash: Schema.String,
  event_index: Schema.Number,
  to_address: Schema.String
})
const Hash = Schema.Struct({ tx_hash: Schema.String })
/** What an order was paid in one asset, confirmed. */
const PaidOfAsset = Schema.Struct({ chain: Chain, currency: Schema.String, total: Schema.String })

export interface TransactionFilter {
  readonly q?: string | undefined
  readonly type?: string | undefined
  readonly status?: string | undefined
  readonly chain?: Chain | undefined
  readonly currency?: string | undefined
  readonly limit: number
  readonly offset: number
}

/** A custody transaction's merchant-visible row, written with its signed bytes. */
export type CustodyTransactionRow = {
  readonly id: string
  readonly merchant_id: string
  readonly type: string
  readonly status: "pending"
  readonly chain: string
  readonly currency: string
  readonly amount: string
  readonly tx_hash: string
  readonly event_index: -1
  readonly from_address: string
  readonly to_address: string
  readonly wallet_id: string | null
  readonly operation_id: string
  readonly withdrawal_id: string | null
}

/** Every statement on `transactions`. */
export class TransactionStore extends Effect.Service<TransactionStore>()("facet/TransactionStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** A merchant's movements, newest first, filtered and paged; with how many match. */
    const search = Effect.fn("TransactionStore.search")(function* (merchantId: string, filter: TransactionFilter) {
      const q = filter.q?.trim()
      const where = sql.and([
        sql`merchant_id = ${merchantId}`,
        ...(q === undefined || q === ""
          ? []
          : [
              sql`(tx_hash = ${q} OR to_address = ${q} OR from_address = ${q} OR order_id = ${q} OR withdrawal_id = ${q} OR deposit_address_id = ${q} OR operation_id = ${q})`
            ]),
        ...(filter.type === undefined ? [] : [sql`type = ${filter.type}`]),
        ...(filter.status === undefined ? [] : [sql`status = ${filter.status}`]),
        ...(filter.chain === undefined ? [] : [sql`chain = ${filter.chain}`]),
        ...(filter.currency === undefined ? [] : [sql`currency = ${filter.currency.trim().toUpperCase()}`])
      ])
      const matching = yield* Effect.flatMap(
        Effect.orDie(sql`SELECT count(*) AS total FROM transactions WHERE ${where}`),
        decodeScalar(Total, "total", () => 0)
      )
      const page = yield* sql`
        SELECT ${sql.literal(TRANSACTION_COLUMNS)} FROM transactions WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeAll(TransactionRow))
      )
      return { total: matching, rows: page }
    })

    /** A deposit address's movements, newest first; with how many it has. */
    const forDepositAddress = Effect.fn("TransactionStore.forDepositAddress")(function* (
      depositAddressId: string,
      limit: number
    ) {
      const all = yield* Effect.flatMap(
        Effect.orDie(sql`SELECT count(*) AS total FROM transactions WHERE deposit_address_id = ${depositAddressId}`),
        decodeScalar(Total, "total", () => 0)
      )
      const page = yield* sql`
        SELECT ${sql.literal(TRANSACTION_COLUMNS)} FROM transactions WHERE deposit_address_id = ${depositAddressId}
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`.pipe(Effect.orDie, Effect.flatMap(decodeAll(TransactionRow)))
      return { total: all, rows: page }
    })

    /** The latest counted-or-not payment of an order still pending or confirmed (what its page shows). */
    const latestOrderPayment = (orderId: string) =>
      sql`
        SELECT tx_hash, chain, currency, amount::text AS amount, status, block_number::text AS block_number FROM transactions
        WHERE order_id = ${orderId} AND type = 'deposit' AND status IN ('pending', 'confirmed') ORDER BY detected_at DESC LIMIT 1`.pipe(
        Effect.orDie,
        Effect.flatMap(decodeFirst(LatestPayment))
      )

    /**
     * What an order was paid, per asset: its confirmed (final) deposits, counted towards it or not (a token it
     * did not ask for, sent to its address, was paid to it too). What a refund may give back.
     */
    const confirmedPaidOfOrder = (orderId: string) =>
      sql`
        SELECT chain, currency, sum(amount)::text AS total FROM transactions
        WHERE order_id = ${orderId} AND type = 'deposit' AND status = 'confirmed' GROUP BY chain, currency ORDER BY chain, currency`.pipe(
        Effect.flatMap(decodeAll(PaidOfAsset))
      )

    /** The lowest block above `block` holding a deposit already final on a chain (none: no final credit there). */
    const firstFinalDepositAbove = (chain: string, block: bigint) =>
      sql`
        SELECT min(block_number)::text AS block FROM transactions
        WHERE chain = ${chain} AND type = 'deposit' AND status = 'confirmed' AND block_number > ${block.toString()}::bigint`.pipe(
        Effect.flatMap(decodeFirst(Block)),
        Effect.map(Option.flatMap((found) => Option.fromNullable(found.block)))
      )

    /**
     * Custody's row of a transaction it signed (kept as it is when the bytes were stored before). Its key has
     * its type in it (migration 0036): a deposit the same transfer makes to a watched address is a row of its own.
     */
    const recordCustodyRow = (row: CustodyTransactionRow) =>
      sql`INSERT INTO transactions ${sql.insert(row)} ON CONFLICT DO NOTHING`.pipe(Effect.asVoid)

    /** A custody transaction's row back to pending or failed, by its hash (an attempt given up on, or landed after all). */
    const setCustodyStatus = (chain: string, txHash: string, status: "pending" | "failed") =>
      sql`UPDATE transactions SET status = ${status}, updated_at = clock_timestamp()
          WHERE chain = ${chain} AND tx_hash = ${txHash} AND type <> 'deposit'`.pipe(Effect.asVoid)

    /** The pending rows of an operation that failed for good. */
    const failPendingOfOperation = (operationId: string) =>
      sql`UPDATE transactions SET status = 'failed', updated_at = clock_timestamp() WHERE operation_id = ${operationId} AND status = 'pending'`.pipe(
        Effect.asVoid
      )

    /** The still-pending rows of custody transactions that can never land (replaced ones whose nonce another used). */
    const failPendingByHashes = (chain: string, txHashes: ReadonlyArray<string>) =>
      txHashes.length === 0
        ? Effect.void
        : sql`UPDATE transactions SET status = 'failed', updated_at = clock_timestamp()
              WHERE chain = ${chain} AND tx_hash IN ${sql.in(txHashes)} AND status = 'pending' AND type <> 'deposit'`.pipe(
            Effect.asVoid
          )

    /** A custody transaction final in its block. */
    const confirmCustodyRow = (
      chain: string,
      txHash: string,
      final: { readonly blockNumber: bigint; readonly confirmations: number }
    ) =>
      sql`
        UPDATE transactions SET status = 'confirmed', block_number = ${final.blockNumber.toString()}, confirmed_at = clock_timestamp(),
               confirmations = ${final.confirmations},
               updated_at = clock_timestamp()
        WHERE chain = ${chain} AND tx_hash = ${txHash} AND type <> 'deposit'`.pipe(Effect.asVoid)

    // ---- the indexer's block writes (indexer/attribution-store.ts)

    /**
     * An order's counted payments still pending or confirmed: the confirmed ones in the order settlement saw
     * them confirmed (a batch's in block order), then the pending ones. Not by block time: one chain's clock
     * may step back (a node restored from a snapshot), and a payment on a slower chain is confirmed after
     * one made later on a faster one. What paid the order is what was confirmed first, as was announced.
     */
    const settlementPayments = (orderId: string) =>
      sql`
        SELECT chain, currency, amount::text AS amount, status, block_time, tx_hash, event_index, to_address FROM transactions
        WHERE order_id = ${orderId} AND type = 'deposit' AND counted AND status IN ('pending', 'confirmed')
        ORDER BY confirmed_at NULLS LAST, block_number, event_index`.pipe(Effect.flatMap(decodeAll(SettlementPayment)))

    /** The hash of an order's latest payment still pending or confirmed. */
    const latestPaymentHash = (orderId: string) =>
      sql`
        SELECT tx_hash FROM transactions WHERE order_id = ${orderId} AND type = 'deposit' AND status IN ('pending', 'confirmed')
        ORDER BY detected_at DESC LIMIT 1`.pipe(
        Effect.flatMap(decodeFirst(Hash)),
        Effect.map(Option.map((found) => found.tx_hash))
      )

    /** How many deposits of a chain are pending at or below its final height. */
    const pendingAtOrBelow = (chain: string, finalized: bigint) =>
      sql`
        SELECT count(*)::int AS n FROM transactions
        WHERE chain = ${chain} AND type = 'deposit' AND status = 'pending' AND block_number <= ${finalized.toString()}`.pipe(
        Effect.flatMap(decodeScalar(Count, "n", () => 0))
      )

    /**
     * Fragment: CTE `u`, the pending deposits of a chain at or below its final height confirmed (their rows
     * returned whole); `depositAddressOf` is the deposit address a row without one is now to be announced
     * with (an expression over the row as `t`).
     */
    const confirmPendingPart = (chain: string, finalized: bigint, head: bigint, depositAddressOf: Fragment) => sql`
      u AS (
        UPDATE transactions t SET status = 'confirmed', confirmed_at = clock_timestamp(), updated_at = clock_timestamp(),
               confirmations = (${head.toString()}::bigint - block_number + 1)::int,
               -- a shared receive wallet paid in an asset whose deposit address was made after the payment
               -- was seen: the address it is now is the one announced
               deposit_address_id = coalesce(t.deposit_address_id, ${depositAddressOf})
        WHERE chain = ${chain} AND type = 'deposit' AND status = 'pending' AND block_number <= ${finalized.toString()}::bigint
        RETURNING *)`

    /**
     * Fragment: CTE `w`, the transfers of the caller's CTE `i` written as deposits: one seen before is not
     * written again; one reversed by a reorg comes back to life (`revived`: an ON CONFLICT update's xmax is
     * not 0).
     */
    const insertDepositsPart = sql`
      w AS (
        INSERT INTO transactions (id, merchant_id, type, status, confirmed_at, chain, currency, amount, tx_hash, event_index,
          from_address, to_address, block_number, block_hash, block_time, confirmations, wallet_id, order_id,
          deposit_address_id, counted, order_value)
        SELECT id, merchant_id, 'deposit', status, confirmed_at, chain, currency, amount, tx_hash, event_index,
          from_address, to_address, block_number, block_hash, block_time, confirmations, wallet_id, order_id,
          deposit_address_id, counted, order_value
        FROM i
        ON CONFLICT (tx_hash, event_index, to_address, chain, type) DO UPDATE SET
          status = excluded.status, block_number = excluded.block_number, block_hash = excluded.block_hash,
          block_time = excluded.block_time,
          reversed_at = NULL, confirmed_at = excluded.confirmed_at, confirmations = excluded.confirmations,
          detected_at = clock_timestamp(), updated_at = clock_timestamp()
        WHERE transactions.status = 'reversed'
        RETURNING *, xmax <> 0 AS revived
      )`

    /** Fragment: CTE `r`, a chain's deposits above a reorg's common ancestor marked reversed (never deleted). */
    const reverseAbovePart = (chain: string, ancestor: bigint) => sql`
      r AS (
        UPDATE transactions SET status = 'reversed', reversed_at = clock_timestamp(), updated_at = clock_timestamp()
        WHERE chain = ${chain} AND type = 'deposit' AND block_number > ${ancestor.toString()}::bigint
          AND status IN ('pending', 'confirmed')
        RETURNING *)`

    /** A devnet reset: every row goes with the chains; how many. */
    const forgetAll = Effect.flatMap(
      sql`WITH d AS (DELETE FROM transactions RETURNING 1) SELECT count(*)::int AS n FROM d`,
      decodeScalar(Count, "n", () => 0)
    )

    return {
      search,
      forDepositAddress,
      latestOrderPayment,
      confirmedPaidOfOrder,
      firstFinalDepositAbove,
      recordCustodyRow,
      setCustodyStatus,
      failPendingOfOperation,
      failPendingByHashes,
      confirmCustodyRow,
      settlementPayments,
      latestPaymentHash,
      pendingAtOrBelow,
      confirmPendingPart,
      insertDepositsPart,
      reverseAbovePart,
      forgetAll
    } as const
  })
}) {}
