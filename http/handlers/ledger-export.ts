import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
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

export const LedgerExportHandlers = HttpApiBuilder.group(FacetApi, "ledgerExport", (handlers) =>
  Effect.gen(function* () {
    const exports = yield* LedgerExports
    return handlers.handle("export", ({ urlParams }) =>
      Effect.gen(function* () {
        const principal = yield* requireScope("read", "the ledger export")
        return exportResponse(yield* exports.open(principal.merchantId, urlParams))
      }).pipe(categorized)
    )
  })
)
