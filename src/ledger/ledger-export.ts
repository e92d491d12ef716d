import { PgClient } from "@effect/sql-pg"
import { Effect, Schema, Stream } from "effect"
import { AppConfig } from "../config.js"
import type { LedgerExportQuery } from "../domain/ledger-export.js"
import { LedgerStore } from "../stores/ledger-store.js"
import { ExportTurns } from "./export-turns.js"
import { paced, type ReaderTooSlow } from "./reader-pace.js"

/** An export the service cannot make: the window backwards, too long, or a date that is none. */
export class InvalidLedgerExport extends Schema.TaggedError<InvalidLedgerExport>()("InvalidLedgerExport", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** The longest window one export covers, in days (a year with its leap day). */
export const MAX_EXPORT_DAYS = 366

/**
 * A bare date is its 00:00 UTC; a date-time keeps its offset. NaN for a calendar day that is none (Date would
 * roll 2025-02-30 over to March 2) or a time that is none.
 */
const instant = (text: string) => {
  const [year = 0, month = 0, day = 0] = text.slice(0, 10).split("-").map(Number)
  const calendar = new Date(Date.UTC(year, month - 1, day))
  const real =
    calendar.getUTCFullYear() === year && calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day
  return real ? new Date(text.length === 10 ? `${text}T00:00:00Z` : text) : new Date(Number.NaN)
}

/** `2026-01-01T00:00:00.000Z` → `20260101T000000Z`: a file name's part. */
const compact = (date: Date) =>
  date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")

/**
 * The accounting export (issue #35): every movement of a merchant's money in a window, with each account's
 * running balance, streamed from the database as CSV or NDJSON at the pace its reader takes it — a year of an
 * exchange's volume never sits in this process's memory. The rows and their rule: LedgerStore
 * (`ledgerExportStatement`); who streams when: ExportTurns; how slow a reader may be: `reader-pace.ts`;
 * docs/guides/ledger-export.md.
 */
export class LedgerExports extends Effect.Service<LedgerExports>()("facet/LedgerExports", {
  effect: Effect.gen(function* () {
    const store = yield* LedgerStore
    const pg = yield* PgClient.PgClient
    const turns = yield* ExportTurns
    const { ledgerExport: limits } = yield* AppConfig
    const pace = { minBytesPerSecond: limits.minBytesPerSecond, window: limits.paceWindow }

    /**
     * The file: its content type, a name for it, and its bytes as a stream (nothing is read until it is
     * pulled). Waits for the merchant's turn first (`ExportTurns`: refused at once when the merchant has two
     * exports already or too many wait), held until the caller's scope closes — the request's, once its
     * answer is written. A reader too slow (`reader-pace.ts`) is logged, `cutOff` (the caller ends the
     * connection: its reader sees a cut, never a clean end) and its turn given back at once; a stream that
     * fails midway is `cutOff` too.
     */
    const open = Effect.fn("LedgerExports.open")(function* (
      merchantId: string,
      request: LedgerExportQuery,
      cutOff: Effect.Effect<void>
    ) {
      const from = instant(request.from)
      const to = instant(request.to)
      if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) {
        return yield* new InvalidLedgerExport({ reason: "from and to must be real dates" })
      }
      if (from >= to) return yield* new InvalidLedgerExport({ reason: "from must be before to (to is exclusive)" })
      if (to.getTime() - from.getTime() > MAX_EXPORT_DAYS * 86_400_000) {
        return yield* new InvalidLedgerExport({
          reason: `one export spans at most ${MAX_EXPORT_DAYS} days: ask for the rest in another`
        })
      }
      const format = request.format
      const annotations = { merchant_id: merchantId, from: from.toISOString(), to: to.toISOString(), format }
      yield* Effect.logInfo("ledger export").pipe(Effect.annotateLogs(annotations))
      const turn = yield* turns.take(merchantId)
      const rows = store.exportRows(
        {
          merchantId,
          from,
          to,
          chain: request.chain,
          currency: request.currency?.toUpperCase()
        },
        format
      )
      // all three, even if the request ends meanwhile (the cut itself ends it)
      const tooSlow = (verdict: ReaderTooSlow) =>
        Effect.logWarning(`ledger export cut off: ${verdict.message}`).pipe(
          Effect.annotateLogs({ ...annotations, behind_bytes: verdict.behindBytes }),
          Effect.zipRight(turns.takeBack(turn)),
          Effect.zipRight(cutOff),
          Effect.uninterruptible
        )
      return {
        contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8",
        filename: `ledger-${compact(from)}-${compact(to)}.${format === "csv" ? "csv" : "ndjson"}`,
        stream: paced(rows, pace, tooSlow).pipe(
          // a failure midway (the database lost) ends the connection, not the body: the platform would end the
          // chunked body cleanly, and the client take a short file for the whole one
          Stream.tapErrorCause(() => cutOff),
          Stream.provideService(PgClient.PgClient, pg)
        )
      }
    })

    return {
      open,
      /** What the turns hold now, and have refused and cut off (for /metrics). */
      turns: turns.state
    } as const
  }),
  dependencies: [LedgerStore.Default, ExportTurns.Default]
}) {}
