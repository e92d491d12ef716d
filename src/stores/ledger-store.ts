import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
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

    return {
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
