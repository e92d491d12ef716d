import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { DepositAddresses } from "../../src/deposits/deposit-addresses.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

export const DepositAddressesHandlers = HttpApiBuilder.group(FacetApi, "depositAddresses", (handlers) =>
  Effect.gen(function* () {
    const deposits = yield* DepositAddresses
    return handlers
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentMerchant, (p) => deposits.list(p.merchantId, urlParams)))
      .handle("create", ({ payload }) =>
        Effect.flatMap(requireScope("deposits", "creating a deposit address"), (p) =>
          deposits.create(p.merchantId, payload)
        ).pipe(categorized)
      )
      .handle("batch", ({ payload }) =>
        Effect.flatMap(requireScope("deposits", "creating deposit addresses"), (p) =>
          deposits.batch(p.merchantId, payload)
        ).pipe(categorized)
      )
      .handle("transactions", ({ path, urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) =>
          deposits.transactions(p.merchantId, path.deposit_address_id, urlParams.limit)
        ).pipe(categorized)
      )
  })
)
