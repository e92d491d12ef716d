import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { PRODUCTION_FOLDERS, productionFiles, repositoryRoot, sourceOf } from "../../test/source-files.js"

/**
 * One owner per table family: a store in this folder declares the rows, columns and every statement on its
 * tables, and nothing else in production code names them in SQL. (Tests and benches may read rows to assert
 * outcomes; the fault campaign and the devnets' reset go through the stores or the catalogue.)
 */
const OWNERS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "src/stores/merchant-store.ts": ["merchants", "api_keys"],
  "src/stores/asset-store.ts": ["wallet_asset_policies", "merchant_assets"],
  "src/stores/order-store.ts": ["orders", "order_assets"],
  "src/stores/payment-link-store.ts": ["payment_links"],
  "src/stores/transaction-store.ts": ["transactions"],
  "src/stores/ledger-store.ts": [
    "ledger_transfers",
    "ledger_postings",
    "ledger_entries",
    "ledger_balances",
    "merchant_balances"
  ],
  "src/stores/webhook-store.ts": ["webhook_events", "webhook_attempts"],
  "src/stores/custody-store.ts": ["custody_operations", "custody_transactions", "evm_nonces"],
  "src/stores/withdrawal-store.ts": [
    "withdrawals",
    "withdrawal_approvals",
    "withdrawal_policy_settings",
    "withdrawal_policy_changes",
    "withdrawal_addresses"
  ],
  "src/stores/withdrawal-batch-store.ts": ["withdrawal_batches", "withdrawal_batch_approvals"],
  "src/stores/indexer-store.ts": ["indexer_cursors", "indexed_blocks", "indexer_leases"],
  "src/stores/untraced-block-store.ts": ["untraced_blocks"],
  "src/stores/reconciliation-store.ts": ["reconciliation_runs"],
  "src/stores/wallet-store.ts": ["wallets", "key_index_counters", "deposit_addresses"],
  "src/stores/console-store.ts": [
    "console_users",
    "console_sessions",
    "console_invites",
    "console_handoffs",
    "console_login_failures"
  ],
  "src/stores/audit-store.ts": ["audit_log"],
  "src/stores/idempotency-store.ts": ["idempotency_keys"],
  "src/stores/chain-identity-store.ts": ["chain_identities"],
  "src/stores/refund-store.ts": ["refunds"]
}

/**
 * Reads a store makes of another family's table inside one of its own statements (a join for a name, a
 * lock taken in the order the other family's writes take it). Declared here, one by one; writes to a table
 * are its owner's alone.
 */
const READS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "src/stores/console-store.ts": ["merchants"],
  // the ledger export's order id and hash of a deposit's transfer (its reference is the transactions row)
  "src/stores/ledger-store.ts": ["wallets", "wallet_asset_policies", "custody_operations", "transactions"],
  "src/stores/wallet-store.ts": ["transactions", "ledger_balances", "custody_operations"],
  // the checkout's merchant name; the settlement's amount precision (the asset policy of the order's currency);
  // expiry decides PARTIALLY_PAID from the order's confirmed counted deposits, as settlement does (#53)
  "src/stores/order-store.ts": ["merchants", "wallet_asset_policies", "transactions"],
  // a link's uses and totals (its orders, their confirmed deposits); the public page's merchant name
  "src/stores/payment-link-store.ts": ["orders", "transactions", "merchants"],
  // a claimed event's signing secret, a replay's current webhook_url, a deposit event's destination; a replay's
  // destination today: the order's notify_url (#53)
  "src/stores/webhook-store.ts": ["merchants", "orders"],
  // approvals by users still present; a refund's withdrawal shows the order it refunds
  "src/stores/withdrawal-store.ts": ["console_users", "refunds"],
  // a batch's status and sums come from its items; its approvals count only users still present
  "src/stores/withdrawal-batch-store.ts": ["withdrawals", "console_users"],
  // a refund shows its withdrawal's hash, net amount and status; its claim page the merchant's name
  "src/stores/refund-store.ts": ["withdrawals", "merchants"],
  // what explains a balance: the deposits recorded to it and, on the native asset, the fees it paid
  "src/stores/reconciliation-store.ts": ["transactions", "wallet_asset_policies"]
}

const root = repositoryRoot

/** The tables and views the migrations leave (created, not dropped afterwards). */
const tablesOfMigrations = (): ReadonlyArray<string> => {
  const dir = path.join(root, "migrations")
  const live = new Set<string>()
  for (const file of fs.readdirSync(dir).sort()) {
    const text = fs.readFileSync(path.join(dir, file), "utf8")
    for (const m of text.matchAll(/\b(CREATE|DROP)\s+(?:TABLE|VIEW)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(\w+)/gi)) {
      const [, verb, name] = m
      if (name === undefined || name === "schema_migrations") continue
      if (verb?.toUpperCase() === "CREATE") live.add(name)
      else live.delete(name)
    }
  }
  return [...live].sort()
}

/** Whether a file names a table the way SQL writes it. */
const writes = (text: string, table: string) =>
  new RegExp(`\\b(?:INTO|UPDATE|TABLE|TRUNCATE|DELETE\\s+FROM)\\s+(?:ONLY\\s+)?${table}\\b`, "i").test(text)
/**
 * The text of a file's `sql` templates, interpolations left out (a table named anywhere in a statement, as
 * in `FROM locked, merchants m`, is read by it).
 */
const sqlBodies = (text: string): string => {
  const bodies: Array<string> = []
  for (const start of text.matchAll(/sql(?:<[^`]*?>)?`/g)) {
    let depth = 0
    for (let i = (start.index ?? 0) + start[0].length; i < text.length; i++) {
      if (depth === 0 && text[i] === "`") break
      if (text.startsWith("${", i)) {
        depth += 1
        i += 1
      } else if (depth > 0 && text[i] === "}") depth -= 1
      else if (depth === 0) bodies.push(text[i] ?? "")
    }
    bodies.push("\n")
  }
  return bodies.join("").replace(/--[^\n]*/g, "")
}
/** Whether a file names a table the way SQL reads it. */
const reads = (text: string, table: string) =>
  new RegExp(`\\b(?:FROM|JOIN)\\s+(?:ONLY\\s+)?${table}\\b`, "i").test(text) ||
  new RegExp(`(?<![\\w.'])${table}(?!\\w)`).test(sqlBodies(text))

describe("table owners", () => {
  it("every table the migrations create has one owning store", () => {
    const owned = Object.values(OWNERS).flat()
    expect(tablesOfMigrations().filter((t) => !owned.includes(t))).toEqual([])
    expect(owned.filter((t, i) => owned.indexOf(t) !== i)).toEqual([])
  })

  it("no production file outside a table's store names it in SQL", () => {
    const ownerOf = new Map(Object.entries(OWNERS).flatMap(([file, tables]) => tables.map((t) => [t, file] as const)))
    const strays = PRODUCTION_FOLDERS.flatMap((folder) => productionFiles(folder)).flatMap((file) => {
      const text = sourceOf(file)
      return [...ownerOf].flatMap(([table, owner]) => {
        if (owner === file) return []
        if (writes(text, table)) return [`${file} writes ${table}`]
        return reads(text, table) && !(READS[file] ?? []).includes(table) ? [`${file} reads ${table}`] : []
      })
    })
    expect(strays).toEqual([])
  })
})
