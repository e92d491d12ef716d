import { Schema } from "effect"
import { Chain } from "./chain.js"

/** An RFC 3339 date-time with its offset (`2026-01-01T00:00:00Z`), or a date (its midnight UTC). */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/

const Instant = (name: string) =>
  Schema.String.pipe(
    Schema.pattern(DATE_TIME, {
      message: () =>
        `${name} must be a date-time with its offset, such as 2026-01-01T00:00:00Z (or a date: its 00:00 UTC)`
    })
  ).annotations({ jsonSchema: { type: "string", format: "date-time" } })

/** GET /v1/ledger-export's query: the window [from, to), the file's format, an optional asset filter. */
export const LedgerExportQuery = Schema.Struct({
  from: Instant("from"),
  to: Instant("to"),
  format: Schema.optionalWith(Schema.Literal("csv", "json"), { default: () => "csv" as const }),
  chain: Schema.optional(Chain),
  currency: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[A-Za-z0-9]{1,16}$/, { message: () => "currency must be 1 to 16 letters or digits" })
    )
  )
}).annotations({ parseOptions: { errors: "all" } })
export type LedgerExportQuery = typeof LedgerExportQuery.Type
