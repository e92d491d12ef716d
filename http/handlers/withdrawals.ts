import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AddressBook } from "../../custody/address-book.js"
import { Withdrawals } from "../../custody/withdrawals.js"
import { Withdrawal } from "../../src/domain/withdrawal.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

export const WithdrawalsHandlers = HttpApiBuilder.group(FacetApi, "withdrawals", (handlers) =>
  Effect.gen(function* () {
    const withdrawals = yield* Withdrawals
    const addressBook = yield* AddressBook
    return handlers
      .handle("quote", ({ payload }) =>
        Effect.flatMap(requireScope("read", "a fee quote"), (principal) =>
          withdrawals.quote(principal.merchantId, payload)
        ).pipe(categorized)
      )
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) => withdrawals.list(p.merchantId, urlParams))
      )
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("withdrawals", "a withdrawal")
          const key = Option.fromNullable(headers["x-service-idempotency-key"])
          const withdrawal = yield* withdrawals.create(principal.merchantId, payload, key, {
            // a key minted in the console requests as its minter: that person cannot approve it too
            actor: { kind: "api_key", name: principal.apiKeyId },
            consoleUserId: principal.mintedByUserId ?? undefined
          })
          return yield* HttpServerResponse.schemaJson(Withdrawal)(withdrawal, { status: 201 }).pipe(Effect.orDie)
        }).pipe(categorized)
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (p) => withdrawals.get(p.merchantId, path.withdrawal_id)).pipe(categorized)
      )
      .handle("addresses", ({ urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) => addressBook.list(p.merchantId, urlParams))
      )
  })
)
