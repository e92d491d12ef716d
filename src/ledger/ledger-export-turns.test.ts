import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { merchantWithConsoleOwner } from "../../test/console-session.js"
import { onboardMerchant } from "../../test/merchants.js"
import { readerAt } from "../../test/paced-reader.js"
import { eventually } from "../../test/webhook-receiver.js"

/**
 * The ledger export's turns against the running service (issue #46, defect 6): slow readers cut off, the
 * waiters bounded, one merchant never holding every turn, merchants taking turns, and nothing kept about a
 * merchant once its exports end. Small limits, so that each cut-off takes a couple of seconds.
 */

/**
 * 1 MiB a second with 2 MiB of slack: a reader that stops is cut off after two windows (the first, the
 * kernel's buffers took), 4 s; one reading four times as fast keeps its turn.
 */
const PACE_WINDOW_SECONDS = 2
const LIMITS = {
  FACET_LEDGER_EXPORTS_AT_ONCE: "2",
  FACET_LEDGER_EXPORTS_WAITING: "2",
  FACET_LEDGER_EXPORT_MIN_BYTES_PER_SECOND: String(2 ** 20),
  FACET_LEDGER_EXPORT_PACE_WINDOW_SECONDS: String(PACE_WINDOW_SECONDS)
}
const logs: Array<string> = []

/**
 * `transfers` deposits into the merchant's available account, each about 600 bytes of NDJSON in its export:
 * 20,000 make 12 MB, more than the sockets between the service and a reader that stopped buffer (about 4 MB
 * here).
 */
const ledgerOf = (merchantId: string, transfers: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const account = `available:${merchantId}`
    yield* sql`
      INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference)
      SELECT 'chain', ${account}, 'TRC20', 'USDT', 1000000, 'deposit', 'txn_' || i || '_' || repeat('x', 400)
      FROM generate_series(1, ${transfers}) i`
    yield* sql`
      INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, debits_posted, credits_posted)
      VALUES (${account}, 'TRC20', 'USDT', 'available', ${merchantId}, 0, ${String(transfers * 1_000_000)}::numeric)`
  })
/** A new merchant with that ledger. */
const merchantWithLedger = (transfers: number) =>
  Effect.tap(onboardMerchant(), (merchant) => ledgerOf(merchant.merchantId, transfers))
const BIG = 20_000
/** 24 MB: six seconds for a reader at 4 MB/s. */
const HUGE = 40_000
const SMALL = 50

/** The export of the last two days (every transfer above) as NDJSON: a path and a query. */
const exportPath = () =>
  `/v1/ledger-export?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}&format=json`

/** The turns as /metrics shows them. */
const turns = Effect.gen(function* () {
  const client = yield* TestClient
  const text = (yield* client.request("GET", "/metrics")).text
  const read = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN)
  return {
    streaming: read("facet_ledger_exports_streaming"),
    waiting: read("facet_ledger_exports_waiting"),
    merchants: read("facet_ledger_exports_merchants"),
    cutOff: read("facet_ledger_exports_cut_off_total")
  }
})

/** Until the turns show `predicate`, at most 10 s; their last reading. */
const turnsUntil = (predicate: (t: Effect.Effect.Success<typeof turns>) => boolean) =>
  eventually(turns, predicate, 10_000)

/** The answer's status, Retry-After and error text; a 200's body is not read (the connection is let go). */
const answerTo = (apiKey: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    return yield* Effect.promise(async () => {
      const response = await fetch(`${client.url}${exportPath()}`, { headers: { "x-api-key": apiKey } })
      const retryAfter = response.headers.get("retry-after")
      if (response.status === 200) {
        await response.body?.cancel()
        return { status: 200, retryAfter, text: "", at: Date.now() }
      }
      return { status: response.status, retryAfter, text: await response.text(), at: Date.now() }
    })
  })

/** An export asked for and let go before its answer came (the client goes away while it waits): `leave` does it. */
const waiterThatLeaves = (apiKey: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const controller = new AbortController()
    fetch(`${client.url}${exportPath()}`, { headers: { "x-api-key": apiKey }, signal: controller.signal }).catch(
      () => undefined
    )
    return () => controller.abort()
  })

/** The whole export, read as fast as it comes: status and lines. */
const wholeExport = (apiKey: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const res = yield* client.request("GET", exportPath(), { apiKey })
    return { status: res.status, lines: res.text.trimEnd().split("\n").length, at: Date.now() }
  })

/** A reader of the export at that pace. */
const exportReader = (apiKey: string, pace: { readonly everyMs: number; readonly bytes: number }) =>
  readerAt(exportPath(), apiKey, pace)

/** A reader of a few bytes a second. */
const slowReader = (apiKey: string) => exportReader(apiKey, { everyMs: 1000, bytes: 5 })

/** Fails the test, rather than hang it, when `self` takes longer than `seconds`. */
const within = <A, E, R>(seconds: number, what: string, self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.timeoutFail({
      duration: Duration.seconds(seconds),
      onTimeout: () => new Error(`${what}: not within ${seconds} s`)
    })
  )

describe("ledger export turns", () => {
  layer(TestAppLive({}, { env: LIMITS, captureLogs: logs }), { excludeTestServices: true, timeout: "90 seconds" })(
    (it) => {
      it.effect(
        "a reader taking a few bytes a second is cut off, its turn given back: another merchant's export runs",
        () =>
          Effect.gen(function* () {
            const a = yield* merchantWithLedger(BIG)
            const b = yield* merchantWithLedger(BIG)
            const c = yield* merchantWithLedger(SMALL)
            const before = yield* turns
            const slowA = yield* slowReader(a.apiKey)
            const slowB = yield* slowReader(b.apiKey)
            expect([slowA.status, slowB.status]).toEqual([200, 200])
            // both turns are the slow readers': the third merchant's export waits
            const third = yield* Effect.fork(wholeExport(c.apiKey))
            expect((yield* turnsUntil((t) => t.waiting === 1)).waiting).toBe(1)
            const started = Date.now()
            const done = yield* within(10 * PACE_WINDOW_SECONDS, "the third export", Fiber.join(third))
            expect([done.status, done.lines]).toEqual([200, SMALL + 1])
            // two windows and a look (4.4 s; a margin for a loaded machine): the first spends the credit the sockets
            // took, the second puts the reader a window behind
            expect(Date.now() - started).toBeLessThan(4_000 * PACE_WINDOW_SECONDS)
            const cutOff = yield* turnsUntil((t) => t.cutOff - before.cutOff === 2)
            expect(cutOff.cutOff - before.cutOff).toBe(2)
            // the slow reader's body is cut, never ended as if it were whole; the cut is logged
            expect(yield* Effect.promise(() => slowA.readToTheEnd())).toBe("cut")
            const cut = logs.filter((l) => l.includes("ledger export cut off") && l.includes(a.merchantId))
            expect(cut.length, logs.filter((l) => l.includes("ledger export")).join("\n")).toBe(1)
            expect(cut[0]).toContain("bytes behind the slowest pace allowed (1048576 bytes a second)")
            const after = yield* turnsUntil((t) => t.streaming === 0 && t.waiting === 0 && t.merchants === 0)
            expect([after.streaming, after.waiting, after.merchants]).toEqual([0, 0, 0])
          }).pipe(Effect.scoped)
      )

      it.effect(
        "beyond the waiters' bound an export is refused at once: 503 with Retry-After; a waiter gone frees its place",
        () =>
          Effect.gen(function* () {
            const client = yield* TestClient
            const [a, b] = [yield* merchantWithLedger(BIG), yield* merchantWithLedger(BIG)]
            const [patient, leaving] = [yield* merchantWithLedger(SMALL), yield* merchantWithLedger(SMALL)]
            const late = yield* Effect.tap(merchantWithConsoleOwner(), (m) => ledgerOf(m.merchantId, SMALL))
            yield* slowReader(a.apiKey)
            yield* slowReader(b.apiKey)
            const waiting = yield* Effect.fork(wholeExport(patient.apiKey))
            const leaves = yield* waiterThatLeaves(leaving.apiKey)
            expect((yield* turnsUntil((t) => t.waiting === 2)).waiting).toBe(2)
            const refused = yield* within(5, "the refusal", answerTo(late.apiKey))
            expect(refused.status).toBe(503)
            expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1)
            expect(JSON.parse(refused.text)).toEqual({ error: expect.stringContaining("busy with ledger exports") })
            // the console's download says the same on its form
            const day = new Date().toISOString().slice(0, 10)
            const fromConsole = yield* within(
              5,
              "the console's refusal",
              client.request("GET", `/console/ledger-export/download?since=${day}&until=${day}&format=json&asset=`, {
                headers: { cookie: late.session.cookie }
              })
            )
            expect([fromConsole.status, Number(fromConsole.headers.get("retry-after")) >= 1]).toEqual([503, true])
            expect(fromConsole.text).toContain("busy with ledger exports")
            // a waiter that goes away gives its place back: the next one waits instead of being refused
            leaves()
            expect((yield* turnsUntil((t) => t.waiting === 1)).waiting).toBe(1)
            const next = yield* Effect.fork(wholeExport(late.apiKey))
            expect((yield* turnsUntil((t) => t.waiting === 2)).waiting).toBe(2)
            // both get their turns once the slow readers are cut off
            for (const fiber of [waiting, next]) {
              const done = yield* within(10 * PACE_WINDOW_SECONDS, "a waiting export", Fiber.join(fiber))
              expect([done.status, done.lines]).toEqual([200, SMALL + 1])
            }
          }).pipe(Effect.scoped)
      )

      it.effect(
        "one merchant never holds both turns: its second export waits for its first, a third is refused 429",
        () =>
          Effect.gen(function* () {
            const a = yield* merchantWithLedger(BIG)
            const b = yield* merchantWithLedger(SMALL)
            const before = yield* turns
            const first = yield* slowReader(a.apiKey)
            expect(first.status).toBe(200)
            const second = yield* Effect.fork(answerTo(a.apiKey))
            expect((yield* turnsUntil((t) => t.waiting === 1)).waiting).toBe(1)
            const third = yield* within(5, "the third export", answerTo(a.apiKey))
            expect(third.status).toBe(429)
            expect(Number(third.retryAfter)).toBeGreaterThanOrEqual(1)
            expect(JSON.parse(third.text)).toEqual({ error: expect.stringContaining("one at a time") })
            // the other turn is free: another merchant's export runs while the first still holds its own
            const other = yield* within(5, "another merchant's export", wholeExport(b.apiKey))
            expect([other.status, other.lines]).toEqual([200, SMALL + 1])
            const now = yield* turns
            expect([now.streaming, now.waiting, now.cutOff - before.cutOff]).toEqual([1, 1, 0])
            // the second gets its turn when the first is cut off
            expect((yield* within(10 * PACE_WINDOW_SECONDS, "the second export", Fiber.join(second))).status).toBe(200)
          }).pipe(Effect.scoped)
      )

      it.effect("a merchant exporting back to back takes turns with the others: its second waits behind them", () =>
        Effect.gen(function* () {
          const a = yield* merchantWithLedger(BIG)
          const b = yield* merchantWithLedger(HUGE)
          const c = yield* merchantWithLedger(SMALL)
          const before = yield* turns
          yield* slowReader(a.apiKey)
          // a reader that keeps pace (200 kB twenty times a second, four times the slowest): it keeps its turn
          const steady = yield* exportReader(b.apiKey, { everyMs: 50, bytes: 200_000 })
          expect(steady.status).toBe(200)
          const again = yield* Effect.fork(answerTo(a.apiKey))
          expect((yield* turnsUntil((t) => t.waiting === 1)).waiting).toBe(1)
          const other = yield* Effect.fork(answerTo(c.apiKey))
          expect((yield* turnsUntil((t) => t.waiting === 2)).waiting).toBe(2)
          // the slow reader's turn goes to the merchant who came after its second export, not to that export
          const otherDone = yield* within(10 * PACE_WINDOW_SECONDS, "the other merchant's export", Fiber.join(other))
          const againDone = yield* within(10 * PACE_WINDOW_SECONDS, "the second export", Fiber.join(again))
          expect([otherDone.status, againDone.status]).toEqual([200, 200])
          expect(otherDone.at).toBeLessThanOrEqual(againDone.at)
          // only the slow one was cut off
          expect((yield* turns).cutOff - before.cutOff, logs.filter((l) => l.includes("cut off")).join("\n")).toBe(1)
        }).pipe(Effect.scoped)
      )

      it.effect("nothing is kept about a merchant once its exports end, however they ended", () =>
        Effect.gen(function* () {
          const merchants = yield* Effect.forEach([1, 2, 3, 4, 5, 6], () => merchantWithLedger(SMALL))
          // read whole, three at once (one of them waits for a turn)
          const whole = yield* Effect.forEach(merchants.slice(0, 3), (m) => wholeExport(m.apiKey), {
            concurrency: 3
          })
          expect(whole.map((w) => w.status)).toEqual([200, 200, 200])
          // let go as soon as the headers came
          for (const m of merchants.slice(3)) expect((yield* answerTo(m.apiKey)).status).toBe(200)
          // and every merchant of the tests above: cut off, refused, gone while waiting, served
          const after = yield* turnsUntil((t) => t.streaming === 0 && t.waiting === 0 && t.merchants === 0)
          expect([after.streaming, after.waiting, after.merchants]).toEqual([0, 0, 0])
        })
      )
    }
  )
})
