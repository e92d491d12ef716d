import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { WithdrawalBatches } from "../../custody/withdrawal-batches.js"
import {
  BatchConflictError,
  BatchForbiddenError,
  BatchInvalidError,
  WithdrawalBatch
} from "../../src/domain/withdrawal-batch.js"
import { CurrentMerchant } from "../../src/merchants/principal.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

export const WithdrawalBatchesHandlers = HttpApiBuilder.group(FacetApi, "withdrawalBatches", (handlers) =>
  Effect.gen(function* () {
    const batches = yield* WithdrawalBatches
    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("withdrawals", "a withdrawal batch")
          const key = Option.fromNullable(headers["x-service-idempotency-key"])
          const batch = yield* batches.create(principal.merchantId, payload, key, {
            // a key minted in the console requests as its minter: that person cannot approve it too
            actor: { kind: "api_key", name: principal.apiKeyId },
            consoleUserId: principal.mintedByUserId ?? undefined,
            source: "api"
          })
          return yield* HttpServerResponse.schemaJson(WithdrawalBatch)(batch, { status: 201 }).pipe(Effect.orDie)
        }).pipe(
          // a refused batch names every refused item: `{error, items}` with the refusal's status
          Effect.catchTags({
            InvalidWithdrawalBatch: (e) => Effect.fail(new BatchInvalidError({ error: e.message, items: e.items })),
            WithdrawalBatchConflict: (e) => Effect.fail(new BatchConflictError({ error: e.message, items: e.items })),
            WithdrawalBatchPolicyRefused: (e) =>
              Effect.fail(new BatchForbiddenError({ error: e.message, items: e.items }))
          }),
          categorized
        )
      )
      .handle("list", ({ urlParams }) => Effect.flatMap(CurrentMerchant, (p) => batches.list(p.merchantId, urlParams)))
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentMerchant, (p) => batches.get(p.merchantId, path.batch_id)).pipe(categorized)
      )
      .handle("items", ({ path, urlParams }) =>
        Effect.flatMap(CurrentMerchant, (p) => batches.items(p.merchantId, path.batch_id, urlParams)).pipe(categorized)
      )
  })
)
