import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema, Stream } from "effect"
import { copyOutStream } from "../database/copy-out.js"
import { decodeAll, decodeFirst, decodeScalar } from "./rows.js"

/** A transfer as `ledger_transfers` keeps it (amounts in the asset's base units, as text). */
export type LedgerTransferRow = {
  readonly debit_account: string
  readonly credit_account: string
  readonly chain: string
  readonly currency: string
  readonly amount: string
  readonly kind: string
  readonly reference: string
}

/** What a batch of transfers adds to one account's posted totals. */
export type LedgerTotalsRow = {
  readonly account: string
  readonly chain: string
  readonly currency: string
  readonly kind: string
  readonly merchant_id: string | null
  readonly wallet_id: string | null
  readonly debits_posted: string
  readonly credits_posted: string
}

const Units = Schema.Struct({ units: Schema.BigInt })
const HeldBalance = Schema.Struct({ merchant_id: Schema.String, wallet_id: Schema.String, units: Schema.BigInt })
const AccountAsset = Schema.Struct({ account: Schema.String, chain: Schema.String, currency: Schema.String })
const WalletAsset = Schema.Struct({
  merchant_id: Schema.String,
  wallet_id: Schema.String,
  chain: Schema.String,
  currency: Schema.String
})
/** A merchant's balances per asset, in the asset's units (the `merchant_balances` view). */
const MerchantBalance = Schema.Struct({
  chain: Schema.String,
  currency: Schema.String,
  uncollected: Schema.String,
  available: Schema.String,
  locked: Schema.String
})
export type MerchantBalance = typeof MerchantBalance.Type
const Count = Schema.Struct({ n: Schema.Number })

/** Collections still running on a wallet keep it out of the lists that start new ones. */
const NO_COLLECTION_RUNNING = `NOT EXISTS (SELECT 1 FROM custody_operations o WHERE o.wallet_id = lb.wallet_id AND o.type = 'collection'
                              AND o.status NOT IN ('COMPLETED', 'FAILED'))`

// ---- the accounting export (GET /v1/ledger-export, the console's Ledger export)

/** What one export reads: one merchant's accounts, a time window [from, to), optionally one chain or currency. */
export interface LedgerExportQuery {
  readonly merchantId: string
  readonly from: Date
  readonly to: Date
  readonly chain?: string | undefined
  readonly currency?: string | undefined
}

/** The export's columns, in order (the CSV header row, the NDJSON keys). */
export const LEDGER_EXPORT_COLUMNS = [
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
] as const
type ExportColumn = (typeof LEDGER_EXPORT_COLUMNS)[number]

/** A SQL string literal of a value already checked (COPY takes no parameters); NUL can never be in one. */
const literal = (value: string) => {
  if (value.includes("\u0000")) throw new RangeError("a NUL cannot be in a COPY literal")
  return `'${value.replaceAll("'", "''")}'`
}

/**
 * A cell a spreadsheet would run as a formula (OWASP "CSV injection": one starting with = + - @, a tab or a
 * carriage return) gets a leading apostrophe; PostgreSQL's CSV output then quotes what needs quoting.
 */
const defused = (expression: string) =>
  `CASE WHEN left(${expression}, 1) IN ('=', '+', '-', '@', E'\\t', E'\\r') THEN '''' || ${expression} ELSE ${expression} END`

/** Base units as the asset's units, exactly: times 10^-decimals (a product keeps every digit), zeros trimmed. */
const units = (expression: string) => `trim_scale(${expression} * r.unit)::text`

const cells: Record<ExportColumn, string> = {
  time: `to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
  transfer_id: "r.id::text",
  kind: "r.kind",
  reference: "r.reference",
  order_id: "r.order_id",
  tx_hash: "r.tx_hash",
  chain: "r.chain",
  currency: "r.currency",
  account: "r.account",
  direction: "r.direction",
  amount: units("r.amount"),
  balance_after: units("r.balance"),
  counterparty: "r.counterparty"
}
/**
 * Cells that cannot start with a formula's character: a time, a number of ours, a word of ours, a non-negative
 * amount, and the catalogue's chain and currency names (letters and digits).
 */
const PLAIN: ReadonlySet<ExportColumn> = new Set(["time", "transfer_id", "direction", "amount", "chain", "currency"])
const csvColumns = LEDGER_EXPORT_COLUMNS.map((c) => (PLAIN.has(c) ? cells[c] : defused(cells[c]))).join(", ")
const jsonColumns = `json_build_object(${LEDGER_EXPORT_COLUMNS.map((c) => `'${c}', ${cells[c]}`).join(", ")})::text`

/** The CSV's header row (written by the service itself, before the database has sorted anything). */
export const LEDGER_EXPORT_CSV_HEADER = `${LEDGER_EXPORT_COLUMNS.join(",")}\n`
const CSV_HEADER_BYTES = new TextEncoder().encode(LEDGER_EXPORT_CSV_HEADER)

/**
 * The statement of one merchant's ledger export: every transfer touching one of its accounts (each receive
 * wallet's `uncollected`, `available`, `locked`) in [from, to), one row per (transfer, merchant account side),
 * with the account's running balance after it; before them, each account's opening balance at `from` — the
 * sum of its transfers before `from` — for every account with one or with a movement in the window. Ordered
 * by time, then transfer id (debit before credit within one transfer; openings first, by chain, currency and
 * account). Read from the transfers alone: an account's opening plus its rows' credits less its debits is
 * its balance at `to`. CSV rows without a header (formula-defused cells) or NDJSON (one object a line).
 */
export const ledgerExportStatement = (query: LedgerExportQuery, format: "csv" | "json") => {
  const from = `${literal(query.from.toISOString())}::timestamptz`
  const to = `${literal(query.to.toISOString())}::timestamptz`
  const filters = [
    ...(query.chain === undefined ? [] : [`b.chain = ${literal(query.chain)}`]),
    ...(query.currency === undefined ? [] : [`b.currency = ${literal(query.currency)}`])
  ]
  // a transfer's side on one of the accounts: debit or credit, and its effect on that account's balance
  const side = (direction: "debit" | "credit", where: string) => {
    const [own, other, sign] =
      direction === "debit" ? ["debit_account", "credit_account", "-"] : ["credit_account", "debit_account", ""]
    return `SELECT t.id, t.created_at, t.kind, t.reference, t.chain, t.currency, t.${own} AS account, '${direction}' AS direction,
             t.amount, ${sign}t.amount AS delta, t.${other} AS counterparty
           FROM ledger_transfers t JOIN accounts a ON a.account = t.${own} AND a.chain = t.chain AND a.currency = t.currency
           WHERE ${where}`
  }
  const inWindow = `t.created_at >= ${from} AND t.created_at < ${to}`
  const statement = `
    WITH accounts AS MATERIALIZED (
      SELECT b.account, b.chain, b.currency, ('1e-' || p.decimals)::numeric AS unit
      FROM ledger_balances b JOIN wallet_asset_policies p ON p.chain = b.chain AND p.currency = b.currency
      WHERE b.merchant_id = ${literal(query.merchantId)} AND b.kind IN ('uncollected', 'available', 'locked')
      ${filters.map((f) => `AND ${f}`).join(" ")}
    ),
    legs AS MATERIALIZED (
      ${side("debit", inWindow)}
      UNION ALL
      ${side("credit", inWindow)}
    ),
    before AS (
      SELECT s.account, s.chain, s.currency, sum(s.delta) AS units FROM (
        ${side("debit", `t.created_at < ${from}`)}
        UNION ALL
        ${side("credit", `t.created_at < ${from}`)}
      ) s GROUP BY s.account, s.chain, s.currency
    ),
    -- the accounts the window moves, once each (a hashed set: a correlated EXISTS over the legs cost a scan of
    -- them per account)
    moved AS (SELECT DISTINCT l.account, l.chain, l.currency FROM legs l),
    opening AS MATERIALIZED (
      SELECT a.account, a.chain, a.currency, a.unit, coalesce(b.units, 0) AS units
      FROM accounts a
      LEFT JOIN before b ON b.account = a.account AND b.chain = a.chain AND b.currency = a.currency
      LEFT JOIN moved m ON m.account = a.account AND m.chain = a.chain AND m.currency = a.currency
      WHERE coalesce(b.units, 0) <> 0 OR m.account IS NOT NULL
    ),
    r AS (
      SELECT 0 AS section, ${from} AS created_at, NULL::bigint AS id, 'opening_balance' AS kind, NULL::text AS reference,
             NULL::text AS order_id, NULL::text AS tx_hash, o.chain, o.currency, o.account, NULL::text AS direction,
             NULL::numeric AS amount, o.units AS balance, NULL::text AS counterparty, o.unit
      FROM opening o
      UNION ALL
      -- (account names compared bytewise: the same partitions, without the locale's slower comparison)
      SELECT 1, l.created_at, l.id, l.kind, l.reference, x.order_id, x.tx_hash, l.chain, l.currency, l.account,
             l.direction, l.amount,
             o.units + sum(l.delta) OVER (PARTITION BY l.account COLLATE "C", l.chain, l.currency ORDER BY l.created_at, l.id
                                          ROWS UNBOUNDED PRECEDING),
             l.counterparty, o.unit
      FROM legs l
      JOIN opening o ON o.account = l.account AND o.chain = l.chain AND o.currency = l.currency
      -- a deposit's order and hash (its reference is its transactions row); nothing looked up for the rest
      LEFT JOIN transactions x ON x.id = CASE WHEN l.kind IN ('deposit', 'deposit_reversal') THEN l.reference END
    )
    SELECT ${format === "csv" ? csvColumns : jsonColumns}
    FROM r
    ORDER BY r.section, r.created_at, r.id, r.direction DESC, r.chain, r.currency, r.account COLLATE "C"`
  return {
    query: statement,
    // CSV: quoting as RFC 4180 does (the header row is the service's). NDJSON: one JSON object a line, written
    // as is — CSV format with a quote and a delimiter no JSON text holds raw (JSON escapes control characters)
    options: format === "csv" ? "FORMAT csv" : "FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02'"
  }
}

/**
 * Every statement on the transfer ledger (migration 0011): `ledger_transfers` (append-only, one row per
 * movement), `ledger_balances` (each account's posted totals per asset) and the `merchant_balances` view. The
 * indexer's set-based block write composes `depositParts` into its own statement.
 */
export class LedgerStore extends Effect.Service<LedgerStore>()("facet/LedgerStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Transfers and the totals they add, in the caller's transaction (two statements, in this order). */
    const append = Effect.fn("LedgerStore.append")(function* (
      transfers: ReadonlyArray<LedgerTransferRow>,
      totals: ReadonlyArray<LedgerTotalsRow>
    ) {
      yield* sql`INSERT INTO ledger_transfers ${sql.insert(transfers)}`
      yield* sql`
        INSERT INTO ledger_balances ${sql.insert(totals)}
        ON CONFLICT (account, chain, currency) DO UPDATE SET
          debits_posted = ledger_balances.debits_posted + excluded.debits_posted,
          credits_posted = ledger_balances.credits_posted + excluded.credits_posted`
    })

    /** Credits minus debits posted to an account, in base units. */
    const balance = (account: string, chain: string, currency: string) =>
      Effect.flatMap(
        sql`SELECT trim_scale(credits_posted - debits_posted)::text AS units FROM ledger_balances
            WHERE account = ${account} AND chain = ${chain} AND currency = ${currency}`,
        decodeScalar(Units, "units", () => 0n)
      )

    /** The same, its row locked until the caller's transaction ends (what a withdrawal draws on). */
    const lockedBalance = (account: string, chain: string, currency: string) =>
      Effect.flatMap(
        sql`SELECT trim_scale(credits_posted - debits_posted)::text AS units FROM ledger_balances
            WHERE account = ${account} AND chain = ${chain} AND currency = ${currency} FOR UPDATE`,
        decodeScalar(Units, "units", () => 0n)
      )

    /** An account's balance row locked, with its owner (none: the account has no row for the asset). */
    const lockHeld = (account: string, chain: string, currency: string) =>
      sql`SELECT merchant_id, wallet_id, trim_scale(credits_posted - debits_posted)::text AS units FROM ledger_balances
          WHERE account = ${account} AND chain = ${chain} AND currency = ${currency} FOR UPDATE`.pipe(
        Effect.flatMap(decodeFirst(HeldBalance))
      )

    /** Main wallets' `uncollected` accounts holding something (confirmed deposits not yet made available). */
    const mainWalletsUncollected = sql`
      SELECT lb.account, lb.chain, lb.currency FROM ledger_balances lb JOIN wallets w ON w.id = lb.wallet_id AND w.kind = 'main'
      WHERE lb.kind = 'uncollected' AND lb.credits_posted > lb.debits_posted LIMIT 500`.pipe(
      Effect.flatMap(decodeAll(AccountAsset))
    )

    /**
     * Receive wallets holding at least the given base units of a native coin custody consolidates itself (TRX
     * on TRC20, BNB on BEP20), none of them being collected, the largest first.
     */
    const nativesToConsolidate = (minimum: { readonly TRC20: bigint; readonly BEP20: bigint }) =>
      sql`
        SELECT lb.merchant_id, lb.wallet_id, lb.chain, lb.currency FROM ledger_balances lb
        JOIN wallets w ON w.id = lb.wallet_id AND w.kind = 'receive'
        JOIN wallet_asset_policies a ON a.chain = lb.chain AND a.currency = lb.currency AND a.is_native AND NOT a.can_collect
        WHERE lb.kind = 'uncollected' AND lb.chain IN ('TRC20', 'BEP20')
          -- the dust a consolidation keeps back for its fee and does not burn waits for more to come
          AND lb.credits_posted - lb.debits_posted >= CASE lb.chain WHEN 'TRC20' THEN ${minimum.TRC20.toString()}::numeric
                                                                    ELSE ${minimum.BEP20.toString()}::numeric END
          AND ${sql.literal(NO_COLLECTION_RUNNING)}
        -- the largest first: many small balances the gas share refuses must not starve the rest
        ORDER BY lb.credits_posted - lb.debits_posted DESC
        LIMIT 100`.pipe(Effect.flatMap(decodeAll(WalletAsset)))

    /** Wallets whose `uncollected` balance of an asset is at least `minimum` base units, none being collected. */
    const uncollectedAtLeast = (chain: string, currency: string, minimum: bigint) =>
      sql`
        SELECT lb.merchant_id, lb.wallet_id, lb.chain, lb.currency FROM ledger_balances lb
        WHERE lb.kind = 'uncollected' AND lb.chain = ${chain} AND lb.currency = ${currency}
          AND lb.credits_posted - lb.debits_posted >= ${minimum.toString()}::numeric
          AND ${sql.literal(NO_COLLECTION_RUNNING)}
        LIMIT 100`.pipe(Effect.flatMap(decodeAll(WalletAsset)))

    const merchantBalances = (merchantId: string) =>
      sql`
        SELECT chain, currency, uncollected::text AS uncollected, available::text AS available, locked::text AS locked
        FROM merchant_balances WHERE merchant_id = ${merchantId}`.pipe(Effect.flatMap(decodeAll(MerchantBalance)))

    /**
     * Fragment: the ledger for the deposits in the caller's CTE `c` that match `which`: one transfer each
     * (chain → the receive wallet's `uncollected`, or back for a reversal) in the asset's base units, and the
     * two accounts' posted totals, as INSERT … SELECT parts of the caller's statement (CTEs `moved`,
     * `balances`, `transfers`).
     */
    const depositParts = (kind: "deposit" | "deposit_reversal", which: Fragment) => {
      const [debit, credit] =
        kind === "deposit"
          ? [sql`'chain'`, sql`'uncollected:' || c.wallet_id`]
          : [sql`'uncollected:' || c.wallet_id`, sql`'chain'`]
      return sql`
        moved AS MATERIALIZED (
          SELECT c.id, c.merchant_id, c.wallet_id, c.chain, c.currency, trim_scale(c.amount * (10::numeric ^ a.decimals)) AS units
          FROM c JOIN wallet_asset_policies a ON a.chain = c.chain AND a.currency = c.currency
          WHERE ${which}
        ),
        -- listed before the transfers so that it runs after them: PostgreSQL runs the parts of a statement
        -- that nothing reads in the reverse of their order here, and the balance rows this locks (a batch
        -- written beside this one waits on them) are then held only from the statement's end to the commit
        balances AS (
          -- the chain's account once for all of them, each receive wallet's once for its own
          INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, wallet_id, debits_posted, credits_posted)
          -- rows locked in one order (each wallet's by account, then the chain's by asset): two batches
          -- written at once (catch-up-writer.ts) wait for each other instead of deadlocking
          (SELECT 'uncollected:' || m.wallet_id, m.chain, m.currency, 'uncollected', m.merchant_id, m.wallet_id,
            ${kind === "deposit" ? sql`0` : sql`sum(m.units)`}, ${kind === "deposit" ? sql`sum(m.units)` : sql`0`}
          FROM moved m GROUP BY m.wallet_id, m.merchant_id, m.chain, m.currency ORDER BY 1, m.chain, m.currency)
          UNION ALL
          (SELECT 'chain', m.chain, m.currency, 'chain', NULL, NULL,
            ${kind === "deposit" ? sql`sum(m.units)` : sql`0`}, ${kind === "deposit" ? sql`0` : sql`sum(m.units)`}
          FROM moved m GROUP BY m.chain, m.currency ORDER BY m.chain, m.currency)
          ON CONFLICT (account, chain, currency) DO UPDATE SET
            debits_posted = ledger_balances.debits_posted + excluded.debits_posted,
            credits_posted = ledger_balances.credits_posted + excluded.credits_posted
        ),
        transfers AS (
          INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference)
          SELECT ${debit}, ${credit}, c.chain, c.currency, c.units, ${kind}, c.id FROM moved c
        )`
    }

    /**
     * A devnet reset: the whole ledger goes. It is append-only (triggers refuse any DELETE): only this lifts
     * that, inside the caller's transaction. How many transfers went.
     */
    const forgetAll = Effect.gen(function* () {
      yield* sql`ALTER TABLE ledger_transfers DISABLE TRIGGER ledger_transfers_kept`
      const rows = yield* sql`WITH d AS (DELETE FROM ledger_transfers RETURNING 1) SELECT count(*)::int AS n FROM d`
      yield* sql`ALTER TABLE ledger_transfers ENABLE TRIGGER ledger_transfers_kept`
      yield* sql`DELETE FROM ledger_balances`
      return yield* decodeScalar(Count, "n", () => 0)(rows)
    })

    /**
     * One merchant's export (`ledgerExportStatement`) as the bytes of its file, streamed from a connection of
     * its own at its reader's pace; a sort this large gets memory of its own there.
     */
    const exportRows = (query: LedgerExportQuery, format: "csv" | "json") => {
      const statement = ledgerExportStatement(query, format)
      const rows = copyOutStream(statement.query, statement.options, [
        "SET work_mem = '256MB'",
        // any export, however its reader keeps pace (one that stops is cut off sooner: src/ledger/reader-pace.ts),
        // holds its turn and connection 15 minutes at most (a year of an exchange's volume streams in well under
        // one), then the server ends it and the connection is cut
        "SET statement_timeout = '15min'"
      ])
      return format === "csv" ? Stream.concat(Stream.succeed(CSV_HEADER_BYTES), rows) : rows
    }

    return {
      exportRows,
      append,
      balance,
      lockedBalance,
      lockHeld,
      mainWalletsUncollected,
      nativesToConsolidate,
      uncollectedAtLeast,
      merchantBalances,
      depositParts,
      forgetAll
    } as const
  })
}) {}
