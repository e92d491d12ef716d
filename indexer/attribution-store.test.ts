import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { NormalizedTransfer } from "../src/chains/chain-client.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import type { Attributed } from "./attribution.js"
import { AttributionStore, type BlockRecord } from "./attribution-store.js"

const HOLDER = "store-test"

const block = (number: bigint, fork = "a"): BlockRecord => ({
  chain: "TRC20", number, hash: `${fork}${number}`, parentHash: `${fork}${number - 1n}`, timestamp: 1_700_000_000
})

const hit = (wallet: { walletId: string; merchantId: string }, to: string, txHash: string, amount: string): Attributed => {
  const transfer: NormalizedTransfer = {
    chain: "TRC20", currency: "USDT", txHash, eventIndex: 0, from: "TSender", to, amount: 1n,
    blockNumber: 0n, blockHash: "", parentHash: "", success: true
  }
  return { transfer, wallet: { ...wallet, purpose: "deposit" }, amount }
}

/** What the store has written for one merchant: rows, ledger, balance, events. */
const state = (merchantId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{
      statuses: string | null; deposits: number; reversals: number; unbalanced: number; balance: string | null; events: number
    }>`
      SELECT (SELECT string_agg(status, ',' ORDER BY tx_hash) FROM transactions WHERE merchant_id = ${merchantId}) AS statuses,
             (SELECT count(*)::int FROM ledger_entries e JOIN transactions t ON t.id = e.reference
               WHERE t.merchant_id = ${merchantId} AND e.kind = 'deposit') AS deposits,
             (SELECT count(*)::int FROM ledger_entries e JOIN transactions t ON t.id = e.reference
               WHERE t.merchant_id = ${merchantId} AND e.kind = 'deposit_reversal') AS reversals,
             (SELECT count(*)::int FROM (SELECT 1 FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id
               JOIN transactions t ON t.id = e.reference WHERE t.merchant_id = ${merchantId}
               GROUP BY p.entry_id HAVING sum(p.amount) <> 0 OR count(*) <> 2) u) AS unbalanced,
             (SELECT trim_scale(uncollected)::text FROM merchant_balances WHERE merchant_id = ${merchantId}) AS balance,
             (SELECT count(*)::int FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed') AS events`,
    (rows) => rows[0]))

describe("attribution store", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("credits on confirmation, reverses a reorged credit with an opposite entry, and revives a transfer once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* AttributionStore
        const client = yield* TestClient
        const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const res = yield* client.request("POST", "/v1/deposit-addresses/batch", {
          apiKey, json: { external_user_ids: ["alice", "bob"], chain: "TRC20", currency: "USDT" }
        })
        const items = asRecord(res.body).items
        const [alice, bob] = (Array.isArray(items) ? items : []).map((i) => asRecord(asRecord(i).deposit_address))
        const walletOf = (address: Record<string, unknown> | undefined) => ({ walletId: String(address?.wallet_id), merchantId })
        yield* sql`INSERT INTO indexer_leases (chain, holder, expires_at) VALUES ('TRC20', ${HOLDER}, now() + interval '1 hour')
                   ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at`
        const toAlice = hit(walletOf(alice), String(alice?.address), "tx-a", "1.5")
        const toBob = hit(walletOf(bob), String(bob?.address), "tx-b", "2.25")

        // seen but not final: a pending row, no credit, no event
        yield* store.writeBlock(block(1n), [toAlice], 0n, HOLDER)
        expect(yield* state(merchantId)).toMatchObject({ statuses: "pending", deposits: 0, balance: null, events: 0 })

        // finality passes it (the UPDATE path): credited and announced
        yield* store.writeBlock(block(2n), [], 1n, HOLDER)
        expect(yield* state(merchantId)).toMatchObject({ statuses: "confirmed", deposits: 1, balance: "1.5", events: 1 })

        // a block already final when written (catching up): credited in the insert's own statement
        yield* store.writeBlock(block(3n), [toBob], 3n, HOLDER)
        expect(yield* state(merchantId)).toMatchObject({ statuses: "confirmed,confirmed", deposits: 2, balance: "3.75", events: 2 })
        const [event] = yield* sql<{ body: string }>`
          SELECT body FROM webhook_events WHERE merchant_id = ${merchantId} AND body::jsonb ->> 'tx_hash' = 'tx-b'`
        expect(JSON.parse(event?.body ?? "{}")).toMatchObject({
          external_user_id: "bob", amount: "2.25", block_number: 3, confirmations: 1, from_address: "TSender"
        })

        // a reorg back to block 0: both reversed (never deleted), each credit undone by its own entry
        const reversed = yield* store.rollbackTo("TRC20", { number: 0n, hash: "a0" }, HOLDER)
        expect(reversed).toBe(2)
        expect(yield* state(merchantId)).toMatchObject({ statuses: "reversed,reversed", deposits: 2, reversals: 2, unbalanced: 0, balance: "0" })

        // alice's transfer reappears on the new branch: the same row comes back, credited once more, no second event
        const [before] = yield* sql<{ id: string }>`SELECT id FROM transactions WHERE tx_hash = 'tx-a'`
        const written = yield* store.writeBlock(block(1n, "b"), [toAlice], 1n, HOLDER)
        expect(written).toEqual({ detected: 1, confirmed: 1 })
        const [after] = yield* sql<{ id: string; block_hash: string }>`SELECT id, block_hash FROM transactions WHERE tx_hash = 'tx-a'`
        expect(after).toEqual({ id: before?.id, block_hash: "b1" })
        expect(yield* state(merchantId)).toMatchObject({ statuses: "confirmed,reversed", deposits: 3, reversals: 2, unbalanced: 0, balance: "1.5", events: 2 })

        // writing the same block again changes nothing
        expect(yield* store.writeBlock(block(1n, "b"), [toAlice], 1n, HOLDER)).toEqual({ detected: 0, confirmed: 0 })
        expect(yield* state(merchantId)).toMatchObject({ deposits: 3, balance: "1.5", events: 2 })

        // a node that repeats a log within a batch: one row, one credit
        const again = hit(walletOf(bob), String(bob?.address), "tx-c", "5")
        expect(yield* store.writeBlocks([{ block: block(2n, "b"), hits: [again, again] }, { block: block(3n, "b"), hits: [again] }], 3n, HOLDER))
          .toEqual({ detected: 1, confirmed: 1 })
        expect(yield* state(merchantId)).toMatchObject({ deposits: 4, balance: "6.5", events: 3 })
      }))
  })
})
