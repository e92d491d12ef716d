import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { Transactions } from "../../src/transactions/transactions.js"
import { FacetApi } from "../api.js"

export const TransactionsHandlers = HttpApiBuilder.group(FacetApi, "transactions", (handlers) =>
  Effect.gen(function* () {
    const transactions = yield* Transactions
    return handlers.handle("search", ({ urlParams }) =>
      Effect.flatMap(CurrentMerchant, (p) => transactions.search(p.merchantId, urlParams))
    )
  })
)
