import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Chain } from "../domain/chain.js"
import { decodeTransactionRows, renderTransaction, TRANSACTION_COLUMNS } from "./transaction-view.js"

export interface TransactionFilter {
  readonly q?: string | undefined
  readonly type?: string | undefined
  readonly status?: string | undefined
  readonly chain?: Chain | undefined
  readonly currency?: string | undefined
  readonly limit: number
  readonly offset: number
}

/** GET /v1/transactions: this merchant's on-chain movements, newest first. */
export class Transactions extends Effect.Service<Transactions>()("facet/Transactions", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const search = Effect.fn("Transactions.search")(function* (merchantId: string, filter: TransactionFilter) {
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
      const [count] = yield* Effect.orDie(
        sql<{ total: string }>`SELECT count(*) AS total FROM transactions WHERE ${where}`
      )
      const rows = yield* sql`
        SELECT ${sql.literal(TRANSACTION_COLUMNS)} FROM transactions WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`.pipe(
        Effect.flatMap(decodeTransactionRows),
        Effect.orDie
      )
      return {
        total: Number(count?.total ?? 0),
        limit: filter.limit,
        offset: filter.offset,
        items: rows.map(renderTransaction)
      }
    })
    return { search } as const
  })
}) {}
