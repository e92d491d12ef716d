import { HttpApiBuilder, HttpApiSchema, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import { RateLimited, RateLimitedError, ServiceUnavailable, ServiceUnavailableError } from "../../src/domain/errors.js"
import type { LedgerExportInProgress, LedgerExportsBusy } from "../../src/ledger/export-turns.js"
import { LedgerExports } from "../../src/ledger/ledger-export.js"
import { FacetApi } from "../api.js"
import { categorized } from "../error-statuses.js"
import { requireScope } from "../scopes.js"

/** The response of an export: the file streamed, named, never cached. */
export const exportResponse = (file: {
  readonly contentType: string
  readonly filename: string
  readonly stream: Parameters<typeof HttpServerResponse.stream>[0]
}) =>
  HttpServerResponse.stream(file.stream, {
    contentType: file.contentType,
    headers: {
      "content-disposition": `attachment; filename="${file.filename}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff"
    }
  })

/**
 * How to end this request's connection midway (a reader too slow to keep its export's turn): the socket is
 * destroyed, so the chunked body never ends cleanly and the client sees a cut, never a short file.
 */
export const cutConnection = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  Effect.sync(() => {
    NodeHttpServerRequest.toServerResponse(request).destroy()
  })
)

/** A refused export's status: the service busy (every turn taken, the waiters full) or the merchant's own. */
export const refusedStatus = (refused: LedgerExportsBusy | LedgerExportInProgress) =>
  refused._tag === "LedgerExportsBusy"
    ? HttpApiSchema.getStatusError(ServiceUnavailable)
    : HttpApiSchema.getStatusError(RateLimited)

const encodeBusy = Schema.encodeSync(ServiceUnavailable)
const encodeInProgress = Schema.encodeSync(RateLimited)

/** A refused export as the API answers it: `{error}`, 503 or 429, and Retry-After. */
const refusedResponse = (refused: LedgerExportsBusy | LedgerExportInProgress) =>
  HttpServerResponse.json(
    refused._tag === "LedgerExportsBusy"
      ? encodeBusy(new ServiceUnavailableError({ error: refused.message }))
      : encodeInProgress(new RateLimitedError({ error: refused.message })),
    { status: refusedStatus(refused), headers: { "retry-after": String(refused.retryAfterSeconds) } }
  ).pipe(Effect.orDie)

export const LedgerExportHandlers = HttpApiBuilder.group(FacetApi, "ledgerExport", (handlers) =>
  Effect.gen(function* () {
    const exports = yield* LedgerExports
    return handlers.handle("export", ({ urlParams }) =>
      Effect.gen(function* () {
        const principal = yield* requireScope("read", "the ledger export")
        const file = yield* exports.open(principal.merchantId, urlParams, yield* cutConnection)
        return exportResponse(file)
      }).pipe(
        Effect.catchTags({ LedgerExportsBusy: refusedResponse, LedgerExportInProgress: refusedResponse }),
        categorized
      )
    )
  })
)
