import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as path from "node:path"
import { Accounts, Ledger, type LedgerTransfer } from "./ledger.js"
import { ApiKeys } from "../merchants/api-keys.js"
import { toBaseUnits } from "../money.js"
import { launchBrowser } from "../../test/browser.js"
import { merchantWithConsoleOwner } from "../../test/console-session.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { asRecord } from "../../test/json.js"
import { onboardMerchant } from "../../test/merchants.js"
import { readerAt } from "../../test/paced-reader.js"
import { eventually } from "../../test/webhook-receiver.js"

/**
 * The accounting export (issue #35 part 5) against the database: transfers posted through the ledger
 * service, read back through GET /v1/ledger-export and the console's download.
 */

const TEST_ACTOR = { kind: "operator", name: "test", from: "test" } as const

/** RFC 4180 as PostgreSQL writes it: fields separated by commas, quoted when they must be, "" inside quotes. */
const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i += 1
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ",") {
      row.push(field)
      field = ""
    } else if (c === "\n") {
      row.push(field)
      rows.push(row)
      row = []
      field = ""
    } else field += c
  }
  if (field !== "" || row.length > 0) rows.push([...row, field])
  return rows
}

/** The CSV as objects by its header row. */
const records = (text: string) => {
  const [header, ...rows] = parseCsv(text)
  return rows.map((r) => Object.fromEntries((header ?? []).map((h, i) => [h, r[i] ?? ""])))
}

/** USDT's decimals on each chain: what its base units are. */
const DECIMALS = { TRC20: 6, BEP20: 18 } as const
const decimalsOf = (chain: string) => (chain === "BEP20" ? DECIMALS.BEP20 : DECIMALS.TRC20)
/** An amount of USDT in the export as base units of its chain (exact). */
const toUnits = (amount: string, chain: string) => toBaseUnits(amount, decimalsOf(chain))

/** A receive wallet of the merchant on a chain (a deposit address of a user): its id. */
const receiveWallet = (apiKey: string, chain: "TRC20" | "BEP20", user: string) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const res = yield* client.request("POST", "/v1/deposit-addresses", {
      apiKey,
      json: { external_user_id: user, chain, currency: "USDT" }
    })
    return String(asRecord(res.body).wallet_id)
  })

/** A deposit, its collection, and a withdrawal with its fee, as the services post them (in the chain's base units). */
const movements = (
  merchantId: string,
  walletId: string,
  chain: "TRC20" | "BEP20",
  reference: string
): ReadonlyArray<LedgerTransfer> => {
  const on = { chain, currency: "USDT" }
  const usdt = (amount: string) => toUnits(amount, chain)
  return [
    {
      ...on,
      debit: Accounts.chain,
      credit: Accounts.uncollected(merchantId, walletId),
      amount: usdt("10.5"),
      kind: "deposit",
      reference
    },
    {
      ...on,
      debit: Accounts.uncollected(merchantId, walletId),
      credit: Accounts.available(merchantId),
      amount: usdt("10"),
      kind: "collection",
      reference: `op_${reference}`
    },
    {
      ...on,
      debit: Accounts.available(merchantId),
      credit: Accounts.locked(merchantId),
      amount: usdt("4"),
      kind: "withdrawal_lock",
      reference: `wdr_${reference}`
    },
    {
      ...on,
      debit: Accounts.locked(merchantId),
      credit: Accounts.chain,
      amount: usdt("3.996"),
      kind: "withdrawal",
      reference: `wdr_${reference}`
    },
    {
      ...on,
      debit: Accounts.locked(merchantId),
      credit: Accounts.fees,
      amount: usdt("0.004"),
      kind: "platform_fee",
      reference: `wdr_${reference}`
    }
  ]
}

describe("ledger export", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "90 seconds" })((it) => {
    it.effect(
      "every movement of one merchant's money with running balances that end at the ledger's; formula-safe CSV, NDJSON, refusals, the console's download",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const ledger = yield* Ledger
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId, session } = yield* merchantWithConsoleOwner({ integration_mode: "hybrid" })
          const other = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const tron = yield* receiveWallet(apiKey, "TRC20", "alice")
          const bsc = yield* receiveWallet(apiKey, "BEP20", "alice")
          const stranger = yield* receiveWallet(other.apiKey, "TRC20", "mallory")
          const post = (transfers: ReadonlyArray<LedgerTransfer>) => sql.withTransaction(ledger.post(transfers))
          const pause = Effect.sleep("20 millis")

          // before the window: a first round (the opening balances); the other merchant's money all along
          yield* post(movements(merchantId, tron, "TRC20", "txn_before"))
          yield* post(movements(other.merchantId, stranger, "TRC20", "txn_stranger_secret"))
          yield* pause
          const from = new Date()
          yield* pause
          // in it: two rounds on two chains, and references a spreadsheet would run as formulas
          yield* post(movements(merchantId, tron, "TRC20", "txn_inside"))
          yield* post(movements(merchantId, bsc, "BEP20", "txn_bsc"))
          // every one of 18 decimals, at a size no float holds
          const large = "98765432.123456789012345678"
          yield* post([
            {
              chain: "BEP20",
              currency: "USDT",
              debit: Accounts.chain,
              credit: Accounts.uncollected(merchantId, bsc),
              amount: toUnits(large, "BEP20"),
              kind: "deposit",
              reference: "txn_large"
            }
          ])
          const hostile = [
            '=HYPERLINK("http://evil.example","click")',
            "+1+1",
            "-2+3",
            "@SUM(A1)",
            "\tTAB",
            "\rCR",
            'a,"quoted"\nline'
          ]
          for (const reference of hostile) {
            yield* post([
              {
                chain: "TRC20",
                currency: "USDT",
                debit: Accounts.chain,
                credit: Accounts.uncollected(merchantId, tron),
                amount: 1n,
                kind: "deposit",
                reference
              }
            ])
          }
          yield* post(movements(other.merchantId, stranger, "TRC20", "txn_stranger_secret_2"))
          yield* pause
          const to = new Date(Date.now() + 60_000)
          const query = `from=${from.toISOString()}&to=${to.toISOString()}`

          const csv = yield* client.request("GET", `/v1/ledger-export?${query}`, { apiKey })
          expect(csv.status, csv.text).toBe(200)
          expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8")
          expect(csv.headers.get("content-disposition")).toMatch(
            /^attachment; filename="ledger-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv"$/
          )
          const [header] = parseCsv(csv.text)
          expect(header).toEqual([
            "time",
            "transfer_id",
            "kind",
            "reference",
            "order_id",
            "tx_hash",
            "chain",
            "currency",
            "account",
            "direction",
            "amount",
            "balance_after",
            "counterparty"
          ])
          const rows = records(csv.text)
          // another merchant's money never shows
          expect(csv.text).not.toContain(other.merchantId)
          expect(csv.text).not.toContain(stranger)
          expect(csv.text).not.toContain("txn_stranger_secret")

          // openings first: each account's balance from the transfers before `from`
          const openings = rows.filter((r) => r.kind === "opening_balance")
          expect(openings.map((r) => [r.chain, r.account, r.balance_after])).toEqual([
            ["BEP20", `available:${merchantId}`, "0"],
            ["BEP20", `locked:${merchantId}`, "0"],
            ["BEP20", `uncollected:${bsc}`, "0"],
            ["TRC20", `available:${merchantId}`, "6"],
            ["TRC20", `locked:${merchantId}`, "0"],
            ["TRC20", `uncollected:${tron}`, "0.5"]
          ])
          expect(openings.every((r) => r.time === from.toISOString().replace(/Z$/, "000Z"))).toBe(true)

          // one row per (transfer, side on this merchant's accounts), in time then transfer id; amounts never negative
          const moves = rows.filter((r) => r.kind !== "opening_balance")
          expect(moves.length).toBe(2 * (1 + 2 + 2 + 1 + 1) + 1 + hostile.length)
          expect(moves.find((r) => r.reference === "txn_large")?.amount).toBe(large)
          const ids = moves.map((r) => Number(r.transfer_id))
          expect(ids).toEqual([...ids].sort((a, b) => a - b))
          expect(moves.every((r) => /^\d+(\.\d+)?$/.test(r.amount))).toBe(true)
          expect(new Set(moves.map((r) => r.direction))).toEqual(new Set(["debit", "credit"]))
          const collection = moves.filter((r) => r.reference === "op_txn_inside")
          expect(collection.map((r) => [r.account, r.direction, r.amount, r.counterparty])).toEqual([
            [`uncollected:${tron}`, "debit", "10", `available:${merchantId}`],
            [`available:${merchantId}`, "credit", "10", `uncollected:${tron}`]
          ])
          expect(moves.filter((r) => r.reference === "wdr_txn_inside").map((r) => [r.kind, r.amount])).toEqual([
            ["withdrawal_lock", "4"],
            ["withdrawal_lock", "4"],
            ["withdrawal", "3.996"],
            ["platform_fee", "0.004"]
          ])

          // formula-injection safe: each hostile reference comes back with a leading apostrophe, intact otherwise
          const references = moves.map((r) => r.reference)
          for (const reference of hostile.slice(0, 6)) expect(references).toContain(`'${reference}`)
          expect(references).toContain('a,"quoted"\nline')
          for (const row of rows) {
            for (const cell of Object.values(row)) expect(cell).not.toMatch(/^[=+\-@\t\r]/)
          }

          // reproducible from the file alone: opening + Σ credits − Σ debits is each row's balance_after, and the
          // last one is the ledger's balance (ledger_balances, the portfolio)
          const running = new Map(openings.map((r) => [`${r.chain}|${r.account}`, toUnits(r.balance_after, r.chain)]))
          for (const row of moves) {
            const key = `${row.chain}|${row.account}`
            const next =
              (running.get(key) ?? 0n) + (row.direction === "credit" ? 1n : -1n) * toUnits(row.amount, row.chain)
            running.set(key, next)
            expect(toUnits(row.balance_after, row.chain), `${row.transfer_id} ${row.account}`).toBe(next)
          }
          const posted = yield* sql<{ account: string; chain: string; units: string }>`
            SELECT account, chain, (credits_posted - debits_posted)::text AS units FROM ledger_balances WHERE merchant_id = ${merchantId}`
          expect(Object.fromEntries([...running].map(([k, v]) => [k, String(v)]))).toEqual(
            Object.fromEntries(posted.map((p) => [`${p.chain}|${p.account}`, p.units]))
          )
          const portfolio = asRecord((yield* client.request("GET", "/v1/wallet-portfolio", { apiKey })).body)
          const usdt = (Array.isArray(portfolio.assets) ? portfolio.assets : [])
            .map(asRecord)
            .find((a) => a.currency === "USDT")
          const tronNetwork = (Array.isArray(usdt?.networks) ? usdt.networks : [])
            .map(asRecord)
            .find((n) => n.chain === "TRC20")
          expect(toUnits(String(tronNetwork?.available_balance), "TRC20")).toBe(
            running.get(`TRC20|available:${merchantId}`)
          )

          // NDJSON: the same rows as JSON objects, values as they are (no apostrophe)
          const json = yield* client.request("GET", `/v1/ledger-export?${query}&format=json`, { apiKey })
          expect(json.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8")
          const lines = json.text
            .trimEnd()
            .split("\n")
            .map((l) => asRecord(JSON.parse(l)))
          expect(lines.length).toBe(rows.length)
          expect(lines.map((l) => l.reference)).toContain(hostile[0])
          expect(lines.map((l) => l.reference)).toContain(hostile[6])
          expect(lines[0]).toMatchObject({ kind: "opening_balance", amount: null, direction: null, transfer_id: null })

          // an asset filter: one chain's accounts only
          const bscOnly = records(
            (yield* client.request("GET", `/v1/ledger-export?${query}&chain=BEP20&currency=usdt`, { apiKey })).text
          )
          expect(new Set(bscOnly.map((r) => r.chain))).toEqual(new Set(["BEP20"]))
          expect(bscOnly.filter((r) => r.kind !== "opening_balance").length).toBe(8)

          // refusals: 400 {error} for a window backwards, empty, longer than 366 days, a date that is none, a format;
          // 401 without a key; 403 for a key without the read scope
          for (const bad of [
            `from=${to.toISOString()}&to=${from.toISOString()}`,
            `from=${from.toISOString()}&to=${from.toISOString()}`,
            "from=2025-01-01&to=2026-01-03",
            "from=2025-02-30&to=2025-03-01",
            "from=yesterday&to=2025-03-01",
            `${query}&format=xlsx`,
            `${query}&currency=US-DT`,
            `to=${to.toISOString()}`
          ]) {
            const refused = yield* client.request("GET", `/v1/ledger-export?${bad}`, { apiKey })
            expect([refused.status, refused.text.startsWith('{"error":')], bad).toEqual([400, true])
          }
          expect((yield* client.request("GET", `/v1/ledger-export?${query}`)).status).toBe(401)
          const keys = yield* ApiKeys
          const depositsOnly = yield* keys.issue(merchantId, ["deposits"], "deposits only", TEST_ACTOR)
          const lacking = yield* client.request("GET", `/v1/ledger-export?${query}`, {
            apiKey: Redacted.value(depositsOnly.key)
          })
          expect([lacking.status, asRecord(lacking.body).error]).toEqual([
            403,
            "this API key lacks the read scope that the ledger export needs"
          ])

          // the console: the form, and the same file for whole days
          const formPage = yield* session.get("/console/ledger-export")
          expect(formPage.text).toContain('action="/console/ledger-export/download"')
          const day = from.toISOString().slice(0, 10)
          const download = yield* client.request(
            "GET",
            `/console/ledger-export/download?since=${day}&until=${day}&format=csv&asset=`,
            {
              headers: { cookie: session.cookie }
            }
          )
          expect(download.status).toBe(200)
          expect(download.headers.get("content-disposition")).toContain("attachment")
          const fromConsole = records(download.text).filter((r) => r.kind !== "opening_balance")
          expect(fromConsole.map((r) => r.transfer_id)).toEqual(expect.arrayContaining(moves.map((r) => r.transfer_id)))
          const consoleRefused = yield* client.request(
            "GET",
            `/console/ledger-export/download?since=${day}&until=2020-01-01`,
            {
              headers: { cookie: session.cookie }
            }
          )
          expect(consoleRefused.status).toBe(400)
          expect(consoleRefused.text).toContain("from must be before to")

          const dir = process.env.FACET_SCREENSHOTS_DIR
          if (dir !== undefined) {
            const browser = yield* launchBrowser
            const context = yield* Effect.promise(() => browser.newContext())
            yield* Effect.promise(() =>
              context.addCookies([
                { name: "facet_console", value: session.cookie.split("=")[1] ?? "", url: `${client.url}/console` }
              ])
            )
            const page = yield* Effect.promise(() => context.newPage())
            yield* Effect.promise(() => page.goto(`${client.url}/console/ledger-export`))
            yield* Effect.promise(() =>
              page.screenshot({ path: path.join(dir, "console-ledger-export.png"), fullPage: true })
            )
          }
        }).pipe(Effect.scoped)
    )

    it.effect("a client that goes away midway ends its COPY and frees its turn; the service lives on", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const sql = yield* SqlClient.SqlClient
        const { apiKey, merchantId } = yield* onboardMerchant()
        // 40,000 transfers into the merchant's available account: megabytes, more than the sockets buffer
        yield* sql`
          INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference)
          SELECT 'chain', ${`available:${merchantId}`}, 'TRC20', 'USDT', 1000000, 'deposit', 'txn_bulk_' || i
          FROM generate_series(1, 40000) i`
        yield* sql`
          INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, debits_posted, credits_posted)
          VALUES (${`available:${merchantId}`}, 'TRC20', 'USDT', 'available', ${merchantId}, 0, 40000000000)`
        const exporting = sql<{
          n: number
        }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'facet-export'`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0)
        )
        const thisYear = `${client.url}/v1/ledger-export?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}&format=json`
        // three abandoned after their first bytes (the service lets two run at once: a turn not given back would
        // leave the next one waiting for ever)
        for (let i = 0; i < 3; i++) {
          const read = yield* Effect.promise(async () => {
            const controller = new AbortController()
            const response = await fetch(thisYear, { headers: { "x-api-key": apiKey }, signal: controller.signal })
            let bytes = 0
            try {
              for await (const chunk of response.body ?? []) {
                bytes += chunk.byteLength
                controller.abort()
              }
            } catch {
              // aborted
            }
            return bytes
          })
          expect(read).toBeGreaterThan(0)
        }
        const gone = yield* eventually(exporting, (n) => n === 0, 10_000)
        expect(gone).toBe(0)
        const whole = yield* client.request("GET", thisYear.replace(client.url, ""), { apiKey })
        expect([whole.status, whole.text.trimEnd().split("\n").length]).toEqual([200, 40_001])
      })
    )

    it.effect(
      "a failure midway (its database connection lost) cuts the connection: never a short file that ends cleanly",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          // 40,000 transfers of about 600 bytes each: 24 MB, more than the sockets on either side hold
          yield* sql`
          INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference)
          SELECT 'chain', ${`available:${merchantId}`}, 'TRC20', 'USDT', 1000000, 'deposit', 'txn_' || i || repeat('x', 400)
          FROM generate_series(1, 40000) i`
          yield* sql`
          INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, debits_posted, credits_posted)
          VALUES (${`available:${merchantId}`}, 'TRC20', 'USDT', 'available', ${merchantId}, 0, 40000000000)`
          const path = `/v1/ledger-export?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}&format=json`
          // a reader holding back, so that the database is midway, waiting to write to the service
          const reader = yield* readerAt(path, apiKey, { everyMs: 1000, bytes: 5 })
          expect(reader.status).toBe(200)
          const blocked = sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'facet-export' AND wait_event = 'ClientWrite'`.pipe(
            Effect.map((rows) => rows[0]?.n ?? 0)
          )
          expect(yield* eventually(blocked, (n) => n === 1, 10_000)).toBe(1)
          yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'facet-export'`
          // what the service holds is read, then the body stops short of its end: an error, not a clean end
          expect(yield* Effect.promise(() => reader.readToTheEnd())).toBe("cut")
        }).pipe(Effect.scoped)
    )
  })
})
