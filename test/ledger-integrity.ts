import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The ledger's invariants over the whole database: every account's posted totals equal the sums of its
 * transfers, and every transaction row points at an existing wallet of its merchant. Zero means sound.
 */
export const ledgerIntegrity = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ dangling: number; projection_off: number }>`
      SELECT
        (SELECT count(*)::int FROM transactions t
          WHERE NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = t.wallet_id AND w.merchant_id = t.merchant_id)) AS dangling,
        (SELECT count(*)::int FROM ledger_balances b WHERE
           b.debits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                               WHERE l.debit_account = b.account AND l.chain = b.chain AND l.currency = b.currency)
           OR b.credits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                                   WHERE l.credit_account = b.account AND l.chain = b.chain AND l.currency = b.currency)) AS projection_off`,
    (rows) => rows[0]
  )
)
