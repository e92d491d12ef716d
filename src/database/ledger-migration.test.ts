import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { databaseAtMigration } from "../../test/migrations-up-to.js"
import { runMigrations } from "./migrator.js"

describe("the ledger migration to one transfer per movement", () => {
  it.scopedLive("converts entries and postings into transfers in base units and keeps every balance", () =>
    Effect.gen(function* () {
      const db = yield* databaseAtMigration(10)
      yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // the old shape: a deposit of 12.5 USDT and 0.75 TRX, and the TRX one reversed by a reorg
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'checkout', '{}', 's')`
        yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
                   VALUES ('w1', 'm1', 'receive', 'deposit', 'TRC20', 'TRON', 'TAddr', 'p', 9, 1)`
        yield* sql`INSERT INTO ledger_entries (id, kind, reference) VALUES (1, 'deposit', 'txn_a'), (2, 'deposit', 'txn_b'), (3, 'deposit_reversal', 'txn_b')`
        yield* sql`INSERT INTO ledger_postings (entry_id, account, merchant_id, wallet_id, chain, currency, amount) VALUES
                     (1, 'chain', NULL, NULL, 'TRC20', 'USDT', -12.5), (1, 'uncollected', 'm1', 'w1', 'TRC20', 'USDT', 12.5),
                     (2, 'chain', NULL, NULL, 'TRC20', 'TRX', -0.75), (2, 'uncollected', 'm1', 'w1', 'TRC20', 'TRX', 0.75),
                     (3, 'chain', NULL, NULL, 'TRC20', 'TRX', 0.75), (3, 'uncollected', 'm1', 'w1', 'TRC20', 'TRX', -0.75)`
        yield* sql`INSERT INTO merchant_balances (merchant_id, chain, currency, uncollected) VALUES ('m1', 'TRC20', 'USDT', 12.5), ('m1', 'TRC20', 'TRX', 0)`

        const { applied } = yield* runMigrations()
        expect(applied).toContain(11)
        const transfers = yield* sql<{
          debit_account: string
          credit_account: string
          currency: string
          amount: string
          kind: string
          reference: string
        }>`
          SELECT debit_account, credit_account, currency, amount::text AS amount, kind, reference FROM ledger_transfers ORDER BY id`
        expect(transfers).toEqual([
          {
            debit_account: "chain",
            credit_account: "uncollected:w1",
            currency: "USDT",
            amount: "12500000",
            kind: "deposit",
            reference: "txn_a"
          },
          {
            debit_account: "chain",
            credit_account: "uncollected:w1",
            currency: "TRX",
            amount: "750000",
            kind: "deposit",
            reference: "txn_b"
          },
          {
            debit_account: "uncollected:w1",
            credit_account: "chain",
            currency: "TRX",
            amount: "750000",
            kind: "deposit_reversal",
            reference: "txn_b"
          }
        ])
        const balances = yield* sql<{ currency: string; uncollected: string }>`
          SELECT currency, uncollected::text AS uncollected FROM merchant_balances WHERE merchant_id = 'm1' ORDER BY currency`
        expect(balances).toEqual([
          { currency: "TRX", uncollected: "0" },
          { currency: "USDT", uncollected: "12.5" }
        ])
        const [chain] = yield* sql<{ debits: string; credits: string }>`
          SELECT debits_posted::text AS debits, credits_posted::text AS credits FROM ledger_balances WHERE account = 'chain' AND currency = 'TRX'`
        expect(chain).toEqual({ debits: "750000", credits: "750000" })
      }).pipe(Effect.provide(db))
    })
  )
})
