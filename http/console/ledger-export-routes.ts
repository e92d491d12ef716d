import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AssetCatalog } from "../../src/assets/asset-catalog.js"
import type { ConsoleSession } from "../../src/console/console-accounts.js"
import { Chain } from "../../src/domain/chain.js"
import type { LedgerExportInProgress, LedgerExportsBusy } from "../../src/ledger/export-turns.js"
import { LedgerExports, MAX_EXPORT_DAYS } from "../../src/ledger/ledger-export.js"
import { categorized } from "../error-statuses.js"
import { html } from "../html.js"
import { cutConnection, refusedStatus } from "../handlers/ledger-export.js"
import { notice, page } from "./console-pages.js"
import { ConsoleGuards, htmlResponse, queryParam, SECURE_HEADERS } from "./route-kit.js"
import { Schema } from "effect"

const DAY = /^\d{4}-\d{2}-\d{2}$/

/** The form: whole days (`until` includes its day), a format, all assets or one. */
const exportPage = (
  session: ConsoleSession,
  assets: ReadonlyArray<string>,
  values: { readonly since: string; readonly until: string },
  message?: string
) =>
  page(
    "Ledger export",
    html`${notice(message)}
<p class="hint">Every movement of your money — deposits and their reversals, collections, withdrawals with their fees — one row per account it touched, with the account's balance after it, and each account's opening balance first. The same file as <code>GET /v1/ledger-export</code> (its columns: the guide's "Ledger export" page). At most ${String(MAX_EXPORT_DAYS)} days at a time; times are UTC.</p>
<form method="get" action="/console/ledger-export/download" class="ledger-export">
<label>From (UTC, that day included) <input type="date" name="since" value="${values.since}" required></label>
<label>Until (UTC, that day included) <input type="date" name="until" value="${values.until}" required></label>
<label>Asset <select name="asset"><option value="">every asset</option>${assets.map((a) => html`<option value="${a}">${a}</option>`)}</select></label>
<label>Format <select name="format"><option value="csv">CSV (spreadsheets)</option><option value="json">NDJSON (one JSON object a line)</option></select></label>
<button type="submit">Download</button></form>`,
    session
  )

const isoDay = (date: Date) => date.toISOString().slice(0, 10)

/** The console's ledger export: the form, and the same file as the API (any role may read the books). */
export const LedgerExportRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn } = yield* ConsoleGuards
    const exports = yield* LedgerExports
    const catalog = yield* AssetCatalog

    const form = (session: ConsoleSession, values: { since: string; until: string }, message?: string, status = 200) =>
      Effect.map(catalog.policies(session.merchantId), (policies) =>
        htmlResponse(
          exportPage(
            session,
            policies.filter((p) => p.merchant_enabled).map((p) => p.asset_key),
            values,
            message
          ),
          status
        )
      )

    const refusedForm = (
      session: ConsoleSession,
      values: { since: string; until: string },
      refused: LedgerExportsBusy | LedgerExportInProgress
    ) =>
      Effect.map(form(session, values, refused.message, refusedStatus(refused)), (response) =>
        HttpServerResponse.setHeader(response, "retry-after", String(refused.retryAfterSeconds))
      )

    yield* router.get(
      "/console/ledger-export",
      signedIn((session) => {
        // the last full month by default
        const now = new Date()
        const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1))
        const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 0))
        return form(session, { since: isoDay(first), until: isoDay(last) })
      })
    )
    yield* router.get(
      "/console/ledger-export/download",
      signedIn((session) =>
        Effect.gen(function* () {
          const since = yield* queryParam("since")
          const until = yield* queryParam("until")
          const asset = yield* queryParam("asset")
          const format = (yield* queryParam("format")) === "json" ? "json" : "csv"
          const values = { since, until }
          if (!DAY.test(since) || !DAY.test(until)) return yield* form(session, values, "Choose both days.", 400)
          const [chain, currency] = asset === "" ? [undefined, undefined] : asset.split("-")
          const decodedChain = chain === undefined ? undefined : Schema.decodeUnknownOption(Chain)(chain)
          // the same rule as the API's query: a currency is letters and digits, nothing else reaches the statement
          if (
            (decodedChain !== undefined && decodedChain._tag === "None") ||
            (currency !== undefined && !/^[A-Za-z0-9]{1,16}$/.test(currency))
          ) {
            return yield* form(session, values, `${asset} is not an asset.`, 400)
          }
          const to = new Date(`${until}T00:00:00Z`)
          to.setUTCDate(to.getUTCDate() + 1)
          const cutOff = yield* cutConnection
          return yield* exports
            .open(
              session.merchantId,
              {
                from: since,
                to: Number.isNaN(to.getTime()) ? until : to.toISOString(),
                format,
                chain: decodedChain?._tag === "Some" ? decodedChain.value : undefined,
                currency
              },
              cutOff
            )
            .pipe(
              Effect.map((file) =>
                HttpServerResponse.stream(file.stream, {
                  contentType: file.contentType,
                  headers: {
                    ...SECURE_HEADERS,
                    "content-disposition": `attachment; filename="${file.filename}"`,
                    "cache-control": "no-store"
                  }
                })
              ),
              // busy, or this merchant's exports already running: the form again, with when to try again
              Effect.catchTags({
                LedgerExportsBusy: (e) => refusedForm(session, values, e),
                LedgerExportInProgress: (e) => refusedForm(session, values, e)
              }),
              categorized,
              Effect.catchTags({ BadRequest: (e) => form(session, values, e.error, 400) })
            )
        })
      )
    )
  })
)
