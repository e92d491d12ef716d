import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema } from "effect"
import type { NormalizedTransfer } from "../src/chains/chain-client.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { merchantWithDepositAddresses, onboardMerchant } from "../test/merchants.js"
import { Orders } from "../src/orders/orders.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { OrderWebhook } from "../src/webhooks/receiver.js"
import { eventually } from "../test/webhook-receiver.js"
import { webhookProblem } from "../test/webhook-bodies.js"
import type { Attributed } from "./attribution.js"
import { AttributionStore, type BlockRecord } from "./attribution-store.js"

const HOLDER = "store-test"

const block = (number: bigint, fork = "a"): BlockRecord => ({
  chain: "TRC20",
  number,
  hash: `${fork}${number}`,
  parentHash: `${fork}${number - 1n}`,
  timestamp: 1_700_000_000
})

const hit = (
  wallet: { walletId: string; merchantId: string },
  to: string,
  txHash: string,
  amount: string
): Attributed => {
  const transfer: NormalizedTransfer = {
    chain: "TRC20",
    currency: "USDT",
    txHash,
    eventIndex: 0,
    from: "TSender",
    to,
    amount: 1n,
    blockNumber: 0n,
    blockHash: "",
    parentHash: "",
    success: true
  }
  return { transfer, wallet: { ...wallet, purpose: "deposit" }, amount }
}

/** This test holds the chain's fence, as an indexer does once it has taken the chain over. */
const holdLease = (chain: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
    INSERT INTO indexer_leases (chain, holder) VALUES (${chain}, ${HOLDER})
    ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder`
  )

/** A payment to an order's pay address (its receive wallet). */
const orderHit = (
  chain: "TRC20" | "BEP20",
  currency: string,
  to: { wallet_id: string; pay_address: string } | undefined,
  merchantId: string,
  txHash: string,
  amount: string,
  eventIndex = 0
): Attributed => ({
  transfer: {
    chain,
    currency,
    txHash,
    eventIndex,
    from: "sender",
    to: to?.pay_address ?? "",
    amount: 1n,
    blockNumber: 0n,
    blockHash: "",
    parentHash: "",
    success: true
  },
  wallet: { walletId: to?.wallet_id ?? "", merchantId, purpose: "order" },
  amount
})

/** An order created through the API, with its pay address's wallet (what an order hit pays). */
const newOrder = (apiKey: string, json: Record<string, unknown>) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const sql = yield* SqlClient.SqlClient
    const created = asRecord((yield* client.request("POST", "/v1/orders", { apiKey, json })).body)
    const orderId = String(created.order_id)
    const [order] = yield* sql<{
      wallet_id: string
      pay_address: string
    }>`SELECT wallet_id, pay_address FROM orders WHERE id = ${orderId}`
    return { orderId, order }
  })

/** What the store has written for one merchant: rows, ledger, balance, events. */
const state = (merchantId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{
        statuses: string | null
        deposits: number
        reversals: number
        unbalanced: number
        balance: string | null
        events: number
      }>`
      SELECT (SELECT string_agg(status, ',' ORDER BY tx_hash) FROM transactions WHERE merchant_id = ${merchantId}) AS statuses,
             (SELECT count(*)::int FROM ledger_transfers l JOIN transactions t ON t.id = l.reference
               WHERE t.merchant_id = ${merchantId} AND l.kind = 'deposit') AS deposits,
             (SELECT count(*)::int FROM ledger_transfers l JOIN transactions t ON t.id = l.reference
               WHERE t.merchant_id = ${merchantId} AND l.kind = 'deposit_reversal') AS reversals,
             -- the merchant's accounts whose posted totals are not the sums of their transfers
             (SELECT count(*)::int FROM ledger_balances b WHERE b.merchant_id = ${merchantId} AND (
               b.debits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                                   WHERE l.debit_account = b.account AND l.chain = b.chain AND l.currency = b.currency)
               OR b.credits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                                       WHERE l.credit_account = b.account AND l.chain = b.chain AND l.currency = b.currency))) AS unbalanced,
             (SELECT trim_scale(uncollected)::text FROM merchant_balances WHERE merchant_id = ${merchantId}) AS balance,
             (SELECT count(*)::int FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed') AS events`,
      (rows) => rows[0]
    )
  )

describe("attribution store", () => {
  layer(TestAppLive(), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect(
      "credits on confirmation, reverses a reorged credit with an opposite entry, and revives a transfer once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const {
            addresses: [alice, bob],
            merchantId
          } = yield* merchantWithDepositAddresses(["alice", "bob"])
          const walletOf = (address: { walletId: string } | undefined) => ({
            walletId: address?.walletId ?? "",
            merchantId
          })
          yield* holdLease("TRC20")
          const toAlice = hit(walletOf(alice), alice?.address ?? "", "tx-a", "1.5")
          const toBob = hit(walletOf(bob), bob?.address ?? "", "tx-b", "2.25")

          // seen but not final: a pending row, no credit, no event
          yield* store.writeBlock(block(1n), [toAlice], 0n, HOLDER)
          expect(yield* state(merchantId)).toMatchObject({ statuses: "pending", deposits: 0, balance: null, events: 0 })

          // finality passes it (the UPDATE path): credited and announced
          yield* store.writeBlock(block(2n), [], 1n, HOLDER)
          expect(yield* state(merchantId)).toMatchObject({
            statuses: "confirmed",
            deposits: 1,
            balance: "1.5",
            events: 1
          })

          // a block already final when written (catching up): credited in the insert's own statement
          yield* store.writeBlock(block(3n), [toBob], 3n, HOLDER)
          expect(yield* state(merchantId)).toMatchObject({
            statuses: "confirmed,confirmed",
            deposits: 2,
            balance: "3.75",
            events: 2
          })
          const [event] = yield* sql<{ body: string }>`
          SELECT body FROM webhook_events WHERE merchant_id = ${merchantId} AND body::jsonb ->> 'tx_hash' = 'tx-b'`
          expect(JSON.parse(event?.body ?? "{}")).toMatchObject({
            external_user_id: "bob",
            amount: "2.25",
            block_number: 3,
            confirmations: 1,
            from_address: "TSender"
          })

          // a reorg back to block 0: both reversed (never deleted), each credit undone by its own entry
          const reversed = yield* store.rollbackTo("TRC20", { number: 0n, hash: "a0" }, HOLDER)
          expect(reversed).toBe(2)
          expect(yield* state(merchantId)).toMatchObject({
            statuses: "reversed,reversed",
            deposits: 2,
            reversals: 2,
            unbalanced: 0,
            balance: "0"
          })

          // alice's transfer reappears on the new branch: the same row comes back, credited once more, no second event
          const [before] = yield* sql<{ id: string }>`SELECT id FROM transactions WHERE tx_hash = 'tx-a'`
          const written = yield* store.writeBlock(block(1n, "b"), [toAlice], 1n, HOLDER)
          expect(written).toEqual({ detected: 1, confirmed: 1 })
          const [after] = yield* sql<{
            id: string
            block_hash: string
          }>`SELECT id, block_hash FROM transactions WHERE tx_hash = 'tx-a'`
          expect(after).toEqual({ id: before?.id, block_hash: "b1" })
          expect(yield* state(merchantId)).toMatchObject({
            statuses: "confirmed,reversed",
            deposits: 3,
            reversals: 2,
            unbalanced: 0,
            balance: "1.5",
            events: 2
          })

          // writing the same block again changes nothing
          expect(yield* store.writeBlock(block(1n, "b"), [toAlice], 1n, HOLDER)).toEqual({ detected: 0, confirmed: 0 })
          expect(yield* state(merchantId)).toMatchObject({ deposits: 3, balance: "1.5", events: 2 })

          // a node that repeats a log within a batch: one row, one credit
          const again = hit(walletOf(bob), bob?.address ?? "", "tx-c", "5")
          expect(
            yield* store.writeBlocks(
              [
                { block: block(2n, "b"), hits: [again, again] },
                { block: block(3n, "b"), hits: [again] }
              ],
              3n,
              HOLDER
            )
          ).toEqual({ detected: 1, confirmed: 1 })
          expect(yield* state(merchantId)).toMatchObject({ deposits: 4, balance: "6.5", events: 3 })

          // two payments to one address in one block: one balance row for the wallet, credited with both
          const twice = [
            hit(walletOf(bob), bob?.address ?? "", "tx-d", "1"),
            hit(walletOf(bob), bob?.address ?? "", "tx-e", "2")
          ]
          expect(yield* store.writeBlock(block(4n, "b"), twice, 4n, HOLDER)).toEqual({ detected: 2, confirmed: 2 })
          expect(yield* state(merchantId)).toMatchObject({ deposits: 6, balance: "9.5", events: 5, unbalanced: 0 })
        })
    )

    it.effect(
      "an exact payment in a converted asset settles the order in that asset's units: 1 + 1 + 1 TRX for 1 USDT at 3 is PAID",
      () =>
        Effect.gen(function* () {
          const store = yield* AttributionStore
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const { orderId, order } = yield* newOrder(apiKey, {
            amount: "1",
            currency: "USDT",
            chain: "TRC20",
            exchange_rate: "3",
            accepted_assets: [
              { chain: "TRC20", currency: "USDT" },
              { chain: "TRC20", currency: "TRX" }
            ]
          })
          const trx = (txHash: string) => orderHit("TRC20", "TRX", order, merchantId, txHash, "1", -1)
          yield* holdLease("TRC20")
          yield* store.writeBlocks(
            [10n, 11n, 12n].map((n) => ({ block: block(n, "t"), hits: [trx(`tx-trx-${n}`)] })),
            12n,
            HOLDER
          )
          const paid = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(paid).toMatchObject({ status: "PAID", late_payment: false })
        })
    )

    it.effect("confirmation and reorg reversal touch deposits only, never the service's own transfers", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = yield* AttributionStore
        const client = yield* TestClient
        const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const address = asRecord(
          (yield* client.request("POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: "carol", chain: "TRC20", currency: "USDT" }
          })).body
        )
        yield* holdLease("TRC20")
        // what custody will record for a sweep of this receive wallet: its own row, its own life
        yield* sql`INSERT INTO transactions (id, merchant_id, type, status, chain, currency, amount, tx_hash, event_index, to_address, block_number, wallet_id)
                   VALUES ('txn_collection_1', ${merchantId}, 'collection', 'pending', 'TRC20', 'USDT', 5, 'tx-sweep', 0, 'TMain', 20, ${String(address.wallet_id)})`
        yield* store.confirm("TRC20", 30n, 30n, HOLDER)
        yield* store.rollbackTo("TRC20", { number: 15n, hash: "x15" }, HOLDER)
        const [row] = yield* sql<{ status: string }>`SELECT status FROM transactions WHERE id = 'txn_collection_1'`
        expect(row?.status).toBe("pending")
        const [entries] = yield* sql<{
          n: number
        }>`SELECT count(*)::int AS n FROM ledger_transfers WHERE reference = 'txn_collection_1'`
        expect(entries?.n).toBe(0)
        expect(yield* sql`SELECT 1 FROM webhook_events WHERE merchant_id = ${merchantId}`).toEqual([])
      })
    )

    it.effect(
      "a custody transfer that reaches a watched address never drops that address's deposit: custody's rows have a key of their own (issue 53, defect 5)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const transactions = yield* TransactionStore
          const {
            addresses: [dave],
            merchantId
          } = yield* merchantWithDepositAddresses(["dave"])
          yield* holdLease("TRC20")
          // custody's row of a TRX transfer it signed to dave's address, written with its signed bytes: event_index
          // -1, the leg's destination — a native deposit's key (a withdrawal there would be a real payment to dave)
          yield* sql`INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address, to_wallet_id, to_address, amount)
                     VALUES ('op_withdrawal_to_dave', 'collection', 'BROADCAST', ${merchantId}, 'TRC20', 'TRX', ${dave?.walletId ?? ""},
                             'TMainWallet', ${dave?.walletId ?? ""}, ${dave?.address ?? ""}, 3000000)`
          yield* transactions.recordCustodyRow({
            id: "txn_withdrawal_to_dave",
            merchant_id: merchantId,
            type: "withdrawal",
            status: "pending",
            chain: "TRC20",
            currency: "TRX",
            amount: "3",
            tx_hash: "tx-withdrawal-to-dave",
            event_index: -1,
            from_address: "TMainWallet",
            to_address: dave?.address ?? "",
            wallet_id: null,
            operation_id: "op_withdrawal_to_dave",
            withdrawal_id: null
          })
          const landed = hit(
            { walletId: dave?.walletId ?? "", merchantId },
            dave?.address ?? "",
            "tx-withdrawal-to-dave",
            "3"
          )
          const native: Attributed = { ...landed, transfer: { ...landed.transfer, currency: "TRX", eventIndex: -1 } }
          expect(yield* store.writeBlock(block(90n, "w"), [native], 90n, HOLDER)).toEqual({ detected: 1, confirmed: 1 })
          const rows = yield* sql<{ type: string; status: string }>`
            SELECT type, status FROM transactions WHERE tx_hash = 'tx-withdrawal-to-dave' ORDER BY type`
          expect(rows).toEqual([
            { type: "deposit", status: "confirmed" },
            { type: "withdrawal", status: "pending" }
          ])
          // custody settling its own row leaves the deposit as it is
          yield* transactions.setCustodyStatus("TRC20", "tx-withdrawal-to-dave", "failed")
          const [deposit] = yield* sql<{ status: string }>`
            SELECT status FROM transactions WHERE tx_hash = 'tx-withdrawal-to-dave' AND type = 'deposit'`
          expect(deposit?.status).toBe("confirmed")
          const [credit] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM ledger_transfers l JOIN transactions t ON t.id = l.reference
            WHERE t.tx_hash = 'tx-withdrawal-to-dave' AND l.kind = 'deposit'`
          expect(credit?.n).toBe(1)
        })
    )

    it.effect(
      "expiry decides from the confirmed payments, as settlement does: a converted order paid less than its currency's precision is PARTIALLY_PAID (issue 53, defect 4)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const orders = yield* Orders
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const { orderId, order } = yield* newOrder(apiKey, {
            amount: "1",
            currency: "USDT",
            chain: "TRC20",
            exchange_rate: "3",
            accepted_assets: [
              { chain: "TRC20", currency: "USDT" },
              { chain: "TRC20", currency: "TRX" }
            ]
          })
          yield* holdLease("TRC20")
          // 0.000001 TRX is worth 0.000000333… USDT: paid_amount shows "0.000000"
          const crumb = orderHit("TRC20", "TRX", order, merchantId, "tx-crumb", "0.000001", -1)
          yield* store.writeBlock(block(100n, "x"), [crumb], 100n, HOLDER)
          yield* sql`UPDATE orders SET expire_at = now() - interval '1 minute' WHERE id = ${orderId}`
          yield* store.writeBlock({ ...block(101n, "x"), timestamp: Math.floor(Date.now() / 1000) }, [], 101n, HOLDER)
          yield* orders.expireDue(100)
          const expired = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(expired).toMatchObject({ status: "PARTIALLY_PAID", paid_amount: "0.000000" })
        })
    )

    it.effect(
      "dust after PAID is no second sale: one order.paid keyed by the order, the dust announced as payment.overpaid with the order's overpaid_amount (issue 53, defect 1)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const { orderId, order } = yield* newOrder(apiKey, { amount: "2", chain: "TRC20", currency: "USDT" })
          yield* holdLease("TRC20")
          const pays = (txHash: string, amount: string) => orderHit("TRC20", "USDT", order, merchantId, txHash, amount)
          // the full payment seen, then final; then two payments of one base unit each, seen and made final
          yield* store.writeBlock(block(110n, "d"), [pays("tx-full", "2")], 0n, HOLDER)
          yield* store.writeBlock(block(111n, "d"), [], 110n, HOLDER)
          yield* store.writeBlock(block(112n, "d"), [pays("tx-dust-1", "0.000001")], 111n, HOLDER)
          yield* store.writeBlock(block(113n, "d"), [pays("tx-dust-2", "0.000001")], 112n, HOLDER)
          yield* store.writeBlock(block(114n, "d"), [], 113n, HOLDER)
          const events = yield* sql<{ idempotency_key: string; body: string }>`
            SELECT idempotency_key, body FROM webhook_events WHERE order_id = ${orderId} ORDER BY created_at, id`
          const bodies = events.map((e) => asRecord(JSON.parse(e.body)))
          const key = (tx: string, event: string) => `deposit:TRC20:USDT:${tx}:${order?.pay_address}:0:${event}`
          expect(events.map((e) => e.idempotency_key)).toEqual([
            key("tx-full", "payment.detected"),
            key("tx-full", "payment.confirmed"),
            `${orderId}:order.paid:PAID`,
            key("tx-dust-1", "payment.overpaid"),
            key("tx-dust-2", "payment.overpaid")
          ])
          expect(bodies.map((b) => [b.event, asRecord(b.order).status, asRecord(b.order).overpaid_amount])).toEqual([
            ["payment.detected", "CONFIRMING", undefined],
            ["payment.confirmed", "PAID", undefined],
            ["order.paid", "PAID", undefined],
            ["payment.overpaid", "PAID", "0.000001"],
            ["payment.overpaid", "PAID", "0.000002"]
          ])
          // one event says "paid": the one a receiver following the docs fulfils on; none other says PAID
          // about a payment that paid it
          expect(bodies.filter((b) => b.event === "order.paid")).toHaveLength(1)
          expect(
            bodies.filter((b) => b.event === "payment.confirmed" && asRecord(b.order).status === "PAID")
          ).toHaveLength(1)
          // one order's events carry their place in the order's sequence
          expect(bodies.map((b) => b.sequence)).toEqual([1, 2, 3, 4, 5])
          for (const e of events) expect(webhookProblem("order.updated", e.idempotency_key, e.body)).toBeUndefined()
          // the merchant sees the overpayment on the order
          const paid = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(paid).toMatchObject({ status: "PAID", paid_amount: "2.000002", overpaid_amount: "0.000002" })
        })
    )

    it.effect(
      "what paid an order is what was confirmed first, whatever the blocks' times say: dust in a later block stamped earlier (a devnet restored from a snapshot, a provider's clock) is an overpayment, never a second payment.confirmed (issue 53)",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const { orderId, order } = yield* newOrder(apiKey, { amount: "3", chain: "TRC20", currency: "USDT" })
          yield* holdLease("TRC20")
          const pays = (txHash: string, amount: string) => orderHit("TRC20", "USDT", order, merchantId, txHash, amount)
          const at = (number: bigint, timestamp: number): BlockRecord => ({ ...block(number, "t"), timestamp })
          // the full payment seen and made final; then, caught up at once (already final when read), one base
          // unit in a block whose time is 20 s before the payment's
          yield* store.writeBlock(at(130n, 1_700_000_100), [pays("tx-paid", "3")], 0n, HOLDER)
          yield* store.writeBlock(at(131n, 1_700_000_101), [], 130n, HOLDER)
          yield* store.writeBlock(at(135n, 1_700_000_080), [pays("tx-dust-early-clock", "0.000001")], 135n, HOLDER)
          const events = yield* sql<{ idempotency_key: string; body: string }>`
            SELECT idempotency_key, body FROM webhook_events WHERE order_id = ${orderId} ORDER BY created_at, id`
          const key = (tx: string, event: string) => `deposit:TRC20:USDT:${tx}:${order?.pay_address}:0:${event}`
          expect(events.map((e) => e.idempotency_key)).toEqual([
            key("tx-paid", "payment.detected"),
            key("tx-paid", "payment.confirmed"),
            `${orderId}:order.paid:PAID`,
            key("tx-dust-early-clock", "payment.overpaid")
          ])
          const paid = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(paid).toMatchObject({ status: "PAID", paid_amount: "3.000001", overpaid_amount: "0.000001" })
        })
    )

    it.effect(
      "two chains settling one order at once: a reversal on one never puts back PENDING over a payment just seen on the other",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant()
          const created = asRecord(
            (yield* client.request("POST", "/v1/orders", {
              apiKey,
              json: {
                amount: "10",
                currency: "USDT",
                accepted_assets: [
                  { chain: "TRC20", currency: "USDT" },
                  { chain: "BEP20", currency: "USDT" }
                ]
              }
            })).body
          )
          const orderId = String(created.order_id)
          const assets = new Map(
            (yield* sql<{ chain: string; wallet_id: string; pay_address: string }>`
          SELECT chain, wallet_id, pay_address FROM order_assets WHERE order_id = ${orderId}`).map((a) => [a.chain, a])
          )
          const pays = (chain: "TRC20" | "BEP20", txHash: string) =>
            orderHit(chain, "USDT", assets.get(chain), merchantId, txHash, "4")
          for (const chain of ["TRC20", "BEP20"]) {
            yield* holdLease(chain)
          }
          const bep20Block = (n: bigint) => ({
            chain: "BEP20" as const,
            number: n,
            hash: `bep${n}`,
            parentHash: `bep${n - 1n}`,
            timestamp: 1_700_000_000
          })
          // a BEP20 payment seen, not final: the order is CONFIRMING
          yield* store.writeBlock(bep20Block(50n), [pays("BEP20", "tx-bep")], 0n, HOLDER)
          // hold the order while both chains' indexers reach it: TRC20 sees a new payment, BEP20 reorgs its one away
          const held = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const holder = yield* Effect.fork(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`SELECT 1 FROM orders WHERE id = ${orderId} FOR UPDATE`
                yield* Deferred.succeed(held, undefined)
                yield* Deferred.await(release)
              })
            )
          )
          yield* Deferred.await(held)
          const waiting = (n: number) =>
            eventually(
              Effect.map(
                sql<{
                  n: number
                }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
                (r) => r[0]?.n ?? 0
              ),
              (count) => count >= n,
              5_000
            )
          const seen = yield* Effect.fork(store.writeBlock(block(60n, "c"), [pays("TRC20", "tx-tron")], 0n, HOLDER))
          yield* waiting(1)
          const reversed = yield* Effect.fork(store.rollbackTo("BEP20", { number: 49n, hash: "bep49" }, HOLDER))
          yield* waiting(2)
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          yield* Fiber.join(seen)
          yield* Fiber.join(reversed)
          const order = asRecord((yield* client.request("GET", `/v1/orders/${orderId}`, { apiKey })).body)
          expect(order.status).toBe("CONFIRMING")
        })
    )

    it.effect(
      "a reorg's outcome reaches the merchant: payment.reversed shows the order back to EXPIRED, order.expired is sent once, payment.restored when mined again",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* AttributionStore
          const orders = yield* Orders
          const { apiKey, merchantId } = yield* onboardMerchant()
          const { orderId, order } = yield* newOrder(apiKey, { amount: "2", chain: "TRC20", currency: "USDT" })
          yield* sql`UPDATE orders SET expire_at = now() - interval '1 minute' WHERE id = ${orderId}`
          yield* holdLease("TRC20")
          // blocks made now, after expire_at: on the chain's clock too the order's time is up
          const now = (n: bigint, fork: string) => ({ ...block(n, fork), timestamp: Math.floor(Date.now() / 1000) })
          yield* store.writeBlock(now(69n, "r"), [], 0n, HOLDER)
          yield* orders.expireDue(100)
          const late = orderHit("TRC20", "USDT", order, merchantId, "tx-late", "2")
          yield* store.writeBlock(now(70n, "r"), [late], 0n, HOLDER)
          yield* store.rollbackTo("TRC20", { number: 69n, hash: "r69" }, HOLDER)
          yield* store.writeBlock(now(70n, "s"), [late], 0n, HOLDER)
          // and once more: the second reversal and restoration are deliveries of their own
          yield* store.rollbackTo("TRC20", { number: 69n, hash: "r69" }, HOLDER)
          yield* store.writeBlock(now(70n, "t"), [late], 0n, HOLDER)
          const events = yield* sql<{ idempotency_key: string; body: string }>`
          SELECT idempotency_key, body FROM webhook_events WHERE order_id = ${orderId} ORDER BY created_at`
          const key = (event: string) => `deposit:TRC20:USDT:tx-late:${order?.pay_address}:0:${event}`
          expect(events.map((e) => e.idempotency_key)).toEqual([
            `${orderId}:order.expired:EXPIRED`,
            key("payment.detected"),
            key("payment.reversed"),
            key("payment.restored"),
            key("payment.reversed#2"),
            key("payment.restored#2")
          ])
          const bodies = events.map((e) => asRecord(JSON.parse(e.body)))
          expect(bodies.map((b) => [b.event, asRecord(b.order).status])).toEqual([
            ["order.expired", "EXPIRED"],
            ["payment.detected", "CONFIRMING"],
            ["payment.reversed", "EXPIRED"],
            ["payment.restored", "CONFIRMING"],
            ["payment.reversed", "EXPIRED"],
            ["payment.restored", "CONFIRMING"]
          ])
          // the signed body says which reversal or restoration it is: the key's #n is made from it
          expect(bodies.map((b) => b.occurrence)).toEqual([undefined, undefined, 1, 1, 2, 2])
          for (const body of bodies) expect(Schema.is(OrderWebhook)(body)).toBe(true)
          for (const e of events) expect(webhookProblem("order.updated", e.idempotency_key, e.body)).toBeUndefined()
        })
    )
  })
})
