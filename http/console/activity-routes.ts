import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { DepositAddresses } from "../../src/deposits/deposit-addresses.js"
import { Orders } from "../../src/orders/orders.js"
import { Transactions } from "../../src/transactions/transactions.js"
import { depositAddressesPage, ordersPage, transactionsPage } from "./console-pages.js"
import { ConsoleGuards, htmlResponse, queryParam } from "./route-kit.js"

/** What happened, to look up (read only): orders, transactions by any id or address, deposit addresses by user. */
export const ActivityRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn } = yield* ConsoleGuards
    const orders = yield* Orders
    const transactions = yield* Transactions
    const depositAddresses = yield* DepositAddresses

    yield* router.get(
      "/console/orders",
      signedIn((session) =>
        Effect.map(orders.list(session.merchantId, { page: 1, size: 100 }), (list) =>
          htmlResponse(ordersPage(session, list.items, list.total))
        )
      )
    )
    yield* router.get(
      "/console/transactions",
      signedIn((session) =>
        Effect.gen(function* () {
          const q = yield* queryParam("q")
          const found = yield* transactions.search(session.merchantId, { q, limit: 100, offset: 0 })
          return htmlResponse(transactionsPage(session, q, found.items, found.total))
        })
      )
    )
    yield* router.get(
      "/console/deposit-addresses",
      signedIn((session) =>
        Effect.gen(function* () {
          const user = (yield* queryParam("user")).trim()
          const found = yield* depositAddresses.list(session.merchantId, {
            external_user_id: user === "" ? undefined : user,
            limit: 100,
            offset: 0
          })
          return htmlResponse(depositAddressesPage(session, user, found.items, found.total))
        })
      )
    )
  })
)
