import { PgClient } from "@effect/sql-pg"
import { Effect, Schema, Stream } from "effect"
import type { LedgerExportQuery } from "../domain/ledger-export.js"
import { LedgerStore } from "../stores/ledger-store.js"

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
/** Exports streamed at once by one process; more wait their turn (each holds a database connection). */
const AT_ONCE = 2

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
 * (`ledgerExportStatement`); docs/guides/ledger-export.md.
 */
export class LedgerExports extends Effect.Service<LedgerExports>()("facet/LedgerExports", {
  effect: Effect.gen(function* () {
    const store = yield* LedgerStore
    const pg = yield* PgClient.PgClient
    const running = yield* Effect.makeSemaphore(AT_ONCE)
    /** Exports streaming now and waiting for a turn (for /metrics). */
    const counts = { streaming: 0, waiting: 0 }
    const counted = (key: keyof typeof counts) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          counts[key] += 1
        }),
        () =>
          Effect.sync(() => {
            counts[key] -= 1
          })
      )
    /** One export at a time per merchant: a merchant's second waits for its first, never for another's turn. */
    const perMerchant = new Map<string, Effect.Semaphore>()
    const turnOf = (merchantId: string) =>
      Effect.sync(() => {
        const known = perMerchant.get(merchantId)
        if (known !== undefined) return known
        const made = Effect.unsafeMakeSemaphore(1)
        perMerchant.set(merchantId, made)
        return made
      })

    /** The file: its content type, a name for it, and its bytes as a stream (nothing is read until it is pulled). */
    const open = Effect.fn("LedgerExports.open")(function* (merchantId: string, request: LedgerExportQuery) {
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
      yield* Effect.logInfo("ledger export").pipe(
        Effect.annotateLogs({ merchant_id: merchantId, from: from.toISOString(), to: to.toISOString(), format })
      )
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
      return {
        contentType: format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8",
        filename: `ledger-${compact(from)}-${compact(to)}.${format === "csv" ? "csv" : "ndjson"}`,
        // a turn among the exports running now, held while the stream is read
        stream: Stream.unwrapScoped(
          Effect.gen(function* () {
            const mine = yield* turnOf(merchantId)
            const wait = { over: false }
            yield* Effect.acquireRelease(
              Effect.sync(() => {
                counts.waiting += 1
              }),
              () =>
                Effect.sync(() => {
                  if (!wait.over) counts.waiting -= 1
                })
            )
            yield* Effect.acquireRelease(mine.take(1), () => mine.release(1))
            yield* Effect.acquireRelease(running.take(1), () => running.release(1))
            yield* Effect.sync(() => {
              wait.over = true
              counts.waiting -= 1
            })
            yield* counted("streaming")
            return rows.pipe(Stream.provideService(PgClient.PgClient, pg))
          })
        )
      }
    })

    /** What the turns hold now (for /metrics): exports streaming, waiting, and merchants the turns keep. */
    const state = Effect.sync(() => ({
      streaming: counts.streaming,
      waiting: counts.waiting,
      merchants: perMerchant.size
    }))

    return { open, state } as const
  }),
  dependencies: [LedgerStore.Default]
}) {}

/** The export turns' gauges in Prometheus text. */
export const ledgerExportMetrics = (state: {
  readonly streaming: number
  readonly waiting: number
  readonly merchants: number
}): string =>
  [
    "# HELP facet_ledger_exports_streaming Ledger exports streaming now in this process.",
    "# TYPE facet_ledger_exports_streaming gauge",
    `facet_ledger_exports_streaming ${state.streaming}`,
    "# HELP facet_ledger_exports_waiting Ledger exports waiting for a turn in this process.",
    "# TYPE facet_ledger_exports_waiting gauge",
    `facet_ledger_exports_waiting ${state.waiting}`,
    "# HELP facet_ledger_exports_merchants Merchants the export turns keep an entry for in this process.",
    "# TYPE facet_ledger_exports_merchants gauge",
    `facet_ledger_exports_merchants ${state.merchants}`,
    ""
  ].join("\n")
