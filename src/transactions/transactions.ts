import { Effect } from "effect"
import { type TransactionFilter, TransactionStore } from "../stores/transaction-store.js"
import { renderTransaction } from "./transaction-view.js"

export type { TransactionFilter }

/** GET /v1/transactions: this merchant's on-chain movements, newest first. */
export class Transactions extends Effect.Service<Transactions>()("facet/Transactions", {
  effect: Effect.gen(function* () {
    const store = yield* TransactionStore
    const search = Effect.fn("Transactions.search")(function* (merchantId: string, filter: TransactionFilter) {
      const found = yield* store.search(merchantId, filter)
      return {
        total: found.total,
        limit: filter.limit,
        offset: filter.offset,
        items: found.rows.map(renderTransaction)
      }
    })
    return { search } as const
  }),
  dependencies: [TransactionStore.Default]
}) {}
