import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { databaseAtMigration } from "../../test/migrations-up-to.js"
import { runMigrations } from "./migrator.js"

describe("deposit events unique by their transaction (migration 0020)", () => {
  it.scopedLive(
    "links the deposit events already written to their transaction, so a deposit confirmed again is not announced twice",
    () =>
      Effect.gen(function* () {
        const db = yield* databaseAtMigration(19)
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          // the old shape: a confirmed deposit and its event keyed by the contract's text alone, an order
          // payment's event and a withdrawal's
          yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('m1', 'M1', 'a1', 'p', 'p', 'b', 'u', 'exchange_wallet', '{}', 's')`
          yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
                   VALUES ('w1', 'm1', 'receive', 'deposit', 'TRC20', 'TRON', 'TAddr', 'p', 9, 1)`
          yield* sql`INSERT INTO deposit_addresses (id, merchant_id, external_user_id, chain, currency, wallet_id, address)
                   VALUES ('d1', 'm1', 'alice', 'TRC20', 'USDT', 'w1', 'TAddr')`
          yield* sql`INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index, from_address, to_address,
                     block_number, wallet_id, deposit_address_id, confirmed_at)
                   VALUES ('txn_1', 'm1', 'deposit', 'confirmed', 'TRC20', 'USDT', 12.5, 'abc123', 0, 'TFrom', 'TAddr', 7, 'w1', 'd1', now())`
          const depositKey = "wallet.deposit.confirmed:TRC20:USDT:abc123:TAddr:0"
          yield* sql`INSERT INTO webhook_events (id, merchant_id, event, idempotency_key, body) VALUES
                     ('evt_1', 'm1', 'wallet.deposit.confirmed', ${depositKey}, '{}'),
                     ('evt_2', 'm1', 'order.updated', 'deposit:TRC20:USDT:abc123:TAddr:0:payment.detected', '{}'),
                     ('evt_3', 'm1', 'wallet.withdrawal.completed', 'wallet.withdrawal.completed:wd_1:0xdef', '{}')`

          const { applied } = yield* runMigrations()
          expect(applied).toContain(20)
          const events = yield* sql<{
            id: string
            transaction_id: string | null
          }>`SELECT id, transaction_id FROM webhook_events ORDER BY id`
          expect(events).toEqual([
            { id: "evt_1", transaction_id: "txn_1" },
            { id: "evt_2", transaction_id: null },
            { id: "evt_3", transaction_id: null }
          ])

          // the deposit confirmed again (a reorg, then mined again), as the attribution store writes it: no second event
          const again = yield* sql<{ id: string }>`
          INSERT INTO webhook_events (id, merchant_id, event, transaction_id, idempotency_key, body)
          VALUES ('evt_4', 'm1', 'wallet.deposit.confirmed', 'txn_1', ${depositKey}, '{}')
          ON CONFLICT (transaction_id) WHERE transaction_id IS NOT NULL DO NOTHING RETURNING id`
          expect(again).toEqual([])
          // every other event is still one per (merchant, idempotency key), as the outbox writes it
          const repeated = yield* sql<{ id: string }>`
          INSERT INTO webhook_events (id, merchant_id, event, idempotency_key, body)
          VALUES ('evt_5', 'm1', 'order.updated', 'deposit:TRC20:USDT:abc123:TAddr:0:payment.detected', '{}')
          ON CONFLICT (merchant_id, idempotency_key) WHERE transaction_id IS NULL DO NOTHING RETURNING id`
          expect(repeated).toEqual([])
          const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_events`
          expect(count?.n).toBe(3)
        }).pipe(Effect.provide(db))
      })
  )
})
