import { Deferred, Duration, Effect, Exit, Schema } from "effect"
import { AppConfig } from "../config.js"

/** Every turn is taken and as many exports wait as may: the service is busy (503, Retry-After). */
export class LedgerExportsBusy extends Schema.TaggedError<LedgerExportsBusy>()("LedgerExportsBusy", {
  streaming: Schema.Number,
  waiting: Schema.Number,
  retryAfterSeconds: Schema.Number
}) {
  override get message() {
    return `the service is busy with ledger exports (${this.streaming} streaming, ${this.waiting} waiting for a turn): try again in ${this.retryAfterSeconds} s`
  }
}

/** The merchant has an export streaming and another waiting for it: a third is refused (429, Retry-After). */
export class LedgerExportInProgress extends Schema.TaggedError<LedgerExportInProgress>()("LedgerExportInProgress", {
  retryAfterSeconds: Schema.Number
}) {
  override get message() {
    return `an export of yours is streaming and another is waiting for it: one at a time; try again in ${this.retryAfterSeconds} s`
  }
}

/** Exports one merchant may have at once: one streaming and one waiting for it. */
const PER_MERCHANT = 2

/** A turn asked for: waiting in the queue, parked behind its merchant's export, streaming, or given back. */
interface Ticket {
  readonly merchantId: string
  readonly granted: Deferred.Deferred<void>
  state: "queued" | "parked" | "streaming" | "done"
}

/** A turn held: `release` gives it back at once (also done when the scope it was taken in closes). */
export interface ExportTurn {
  readonly release: Effect.Effect<void>
}

/** What the turns hold now, and what they have refused and cut off since the start (for /metrics). */
export interface ExportTurnsState {
  readonly streaming: number
  readonly waiting: number
  /** Merchants with an export streaming or waiting: the only ones the turns keep anything about. */
  readonly merchants: number
  readonly refusedBusy: number
  readonly refusedInProgress: number
  readonly cutOff: number
}

/**
 * Who streams a ledger export now (issue #46, defect 6). At most `atOnce` exports stream (each holds a
 * database connection and a sort), at most `waiting` wait for a turn, and one merchant streams at most one
 * export at a time — a second waits for its first, a third is refused. Waiters are served in the order they
 * came, except that a merchant's second export joins the back of the queue only when its first ends: a
 * merchant exporting back to back takes turns with the others instead of keeping its own. Nothing is kept
 * about a merchant with no export streaming or waiting. A turn is held while its reader keeps pace
 * (`reader-pace.ts`); one cut off gives its turn back at once (`LedgerExports`).
 */
export class ExportTurns extends Effect.Service<ExportTurns>()("facet/ExportTurns", {
  effect: Effect.gen(function* () {
    const { ledgerExport: limits } = yield* AppConfig
    const retryAfterSeconds = Math.max(1, Math.ceil(Duration.toSeconds(limits.paceWindow)))
    const queue: Array<Ticket> = []
    const merchants = new Map<string, Set<Ticket>>()
    const counts = { streaming: 0, parked: 0, refusedBusy: 0, refusedInProgress: 0, cutOff: 0 }
    const waitingNow = () => queue.length + counts.parked
    const streamingFor = (merchantId: string) =>
      [...(merchants.get(merchantId) ?? [])].some((t) => t.state === "streaming")

    const start = (ticket: Ticket) => {
      ticket.state = "streaming"
      counts.streaming += 1
      Deferred.unsafeDone(ticket.granted, Exit.void)
    }

    /** Hands free turns to the queue's first waiters; a merchant's other waiter parks behind its turn. */
    const grant = () => {
      while (counts.streaming < limits.atOnce) {
        const next = queue.shift()
        if (next === undefined) return
        start(next)
        for (const other of merchants.get(next.merchantId) ?? []) {
          if (other.state !== "queued") continue
          queue.splice(queue.indexOf(other), 1)
          other.state = "parked"
          counts.parked += 1
        }
      }
    }

    const admit = (merchantId: string) =>
      Effect.flatMap(Deferred.make<void>(), (granted) =>
        Effect.suspend((): Effect.Effect<Ticket, LedgerExportInProgress | LedgerExportsBusy> => {
          const mine = merchants.get(merchantId) ?? new Set<Ticket>()
          if (mine.size >= PER_MERCHANT) {
            counts.refusedInProgress += 1
            return Effect.fail(new LedgerExportInProgress({ retryAfterSeconds }))
          }
          const behindMine = streamingFor(merchantId)
          const now = !behindMine && counts.streaming < limits.atOnce
          if (!now && waitingNow() >= limits.waiting) {
            counts.refusedBusy += 1
            return Effect.fail(
              new LedgerExportsBusy({ streaming: counts.streaming, waiting: waitingNow(), retryAfterSeconds })
            )
          }
          const ticket: Ticket = { merchantId, granted, state: "queued" }
          mine.add(ticket)
          merchants.set(merchantId, mine)
          if (now) start(ticket)
          else if (behindMine) {
            ticket.state = "parked"
            counts.parked += 1
          } else queue.push(ticket)
          return Effect.succeed(ticket)
        })
      )

    const release = (ticket: Ticket) =>
      Effect.sync(() => {
        const was = ticket.state
        if (was === "done") return
        ticket.state = "done"
        const mine = merchants.get(ticket.merchantId)
        mine?.delete(ticket)
        if (mine !== undefined && mine.size === 0) merchants.delete(ticket.merchantId)
        if (was === "queued") queue.splice(queue.indexOf(ticket), 1)
        if (was === "parked") counts.parked -= 1
        if (was !== "streaming") return
        counts.streaming -= 1
        // its merchant's next export waits behind everyone who came while this one streamed
        for (const other of mine ?? []) {
          if (other.state !== "parked") continue
          other.state = "queued"
          counts.parked -= 1
          queue.push(other)
        }
        grant()
      })

    /**
     * A turn for one of the merchant's exports, waited for (the wait ends if the caller goes away); refused
     * at once when the merchant has two already or the waiters are full. Given back when `scope` closes.
     */
    const take = Effect.fn("ExportTurns.take")(function* (merchantId: string) {
      const ticket = yield* Effect.acquireRelease(admit(merchantId), release)
      yield* Deferred.await(ticket.granted)
      return { release: release(ticket) } satisfies ExportTurn
    })

    /** A turn taken back from a reader too slow: given back at once, and counted. */
    const takeBack = (turn: ExportTurn) =>
      Effect.zipRight(
        Effect.sync(() => {
          counts.cutOff += 1
        }),
        turn.release
      )

    const state: Effect.Effect<ExportTurnsState> = Effect.sync(() => ({
      streaming: counts.streaming,
      waiting: waitingNow(),
      merchants: merchants.size,
      refusedBusy: counts.refusedBusy,
      refusedInProgress: counts.refusedInProgress,
      cutOff: counts.cutOff
    }))

    return { take, takeBack, state } as const
  })
}) {}

/** The turns' gauges and counters in Prometheus text. */
export const exportTurnsMetrics = (state: ExportTurnsState): string =>
  [
    "# HELP facet_ledger_exports_streaming Ledger exports streaming now in this process.",
    "# TYPE facet_ledger_exports_streaming gauge",
    `facet_ledger_exports_streaming ${state.streaming}`,
    "# HELP facet_ledger_exports_waiting Ledger exports waiting for a turn in this process.",
    "# TYPE facet_ledger_exports_waiting gauge",
    `facet_ledger_exports_waiting ${state.waiting}`,
    "# HELP facet_ledger_exports_merchants Merchants with a ledger export streaming or waiting in this process.",
    "# TYPE facet_ledger_exports_merchants gauge",
    `facet_ledger_exports_merchants ${state.merchants}`,
    "# HELP facet_ledger_exports_refused_total Ledger exports refused: busy (503) or the merchant's own in progress (429).",
    "# TYPE facet_ledger_exports_refused_total counter",
    `facet_ledger_exports_refused_total{reason="busy"} ${state.refusedBusy}`,
    `facet_ledger_exports_refused_total{reason="in_progress"} ${state.refusedInProgress}`,
    "# HELP facet_ledger_exports_cut_off_total Ledger exports cut off because their reader was too slow.",
    "# TYPE facet_ledger_exports_cut_off_total counter",
    `facet_ledger_exports_cut_off_total ${state.cutOff}`,
    ""
  ].join("\n")
