import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import { AppConfig } from "../src/config.js"
import { payFromCustomer } from "../src/devnet/devnet-payments.js"
import { devnetFilePath, DevnetFile } from "../src/devnet/devnets.js"
import { WalletDepositWebhook } from "../src/webhooks/receiver.js"
import { webhookProblem } from "../test/webhook-bodies.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"

// a TRON finality window wide enough to reorg inside
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CONFIRMATIONS_TRC20: "8" } })

const devnet = Effect.flatMap(AppConfig, (config) =>
  Schema.decodeUnknown(Schema.parseJson(DevnetFile))(fs.readFileSync(devnetFilePath(config.dataDir), "utf8"))
)

const pay = (asset: string, to: string, amount: string) =>
  Effect.flatMap(devnet, (file) => payFromCustomer(file, asset, to, amount))

const order = (apiKey: string, id: string) =>
  Effect.flatMap(TestClient, (c) =>
    Effect.map(c.request("GET", `/v1/orders/${id}`, { apiKey }), (r) => asRecord(r.body))
  )

const createOrder = (apiKey: string, json: unknown) =>
  Effect.flatMap(TestClient, (c) =>
    Effect.map(c.request("POST", "/v1/orders", { apiKey, json }), (r) => asRecord(r.body))
  )

const untilStatus = (apiKey: string, id: string, status: string, timeoutMs = 20_000) =>
  eventually(order(apiKey, id), (o) => o.status === status, timeoutMs)

const events = (orderId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{
        idempotency_key: string
        body: string
      }>`SELECT idempotency_key, body FROM webhook_events WHERE order_id = ${orderId} ORDER BY created_at`
  )

describe("indexers on the devnets", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.effect(
      "an exact TRC20 payment takes the order through CONFIRMING to PAID, with events, ledger and balance",
      () =>
        Effect.gen(function* () {
          const { apiKey, merchantId } = yield* onboardMerchant()
          const created = yield* createOrder(apiKey, { amount: "12.5" })
          const id = String(created.order_id)
          const tx = yield* pay("TRC20-USDT", String(created.pay_address), "12.5")
          yield* untilStatus(apiKey, id, "CONFIRMING")
          const paid = yield* untilStatus(apiKey, id, "PAID")
          expect(paid).toMatchObject({ status: "PAID", paid_amount: "12.500000", tx_hash: tx, late_payment: false })
          const keys = (yield* events(id)).map((e) => e.idempotency_key)
          // and once per order, the transition to PAID a merchant fulfils on (#53)
          expect(keys).toEqual([
            `deposit:TRC20:USDT:${tx}:${String(created.pay_address)}:0:payment.detected`,
            `deposit:TRC20:USDT:${tx}:${String(created.pay_address)}:0:payment.confirmed`,
            `${id}:order.paid:PAID`
          ])
          const confirmed = asRecord(JSON.parse((yield* events(id))[1]?.body ?? "{}"))
          expect(confirmed).toMatchObject({
            event: "payment.confirmed",
            order: { status: "PAID" },
            payment: { amount: "12.5", tx_hash: tx }
          })
          const sql = yield* SqlClient.SqlClient
          const [balance] = yield* sql<{ uncollected: string }>`
          SELECT uncollected::text AS uncollected FROM merchant_balances WHERE merchant_id = ${merchantId} AND chain = 'TRC20' AND currency = 'USDT'`
          expect(balance?.uncollected).toBe("12.5")
          // one transfer, chain → the receive wallet's uncollected account, in base units
          const transfers = yield* sql<{ debit_account: string; credit_account: string; amount: string; kind: string }>`
          SELECT l.debit_account, l.credit_account, l.amount::text AS amount, l.kind
          FROM ledger_transfers l JOIN transactions t ON t.id = l.reference WHERE t.merchant_id = ${merchantId}`
          const [wallet] = yield* sql<{ wallet_id: string }>`SELECT wallet_id FROM orders WHERE id = ${id}`
          expect(transfers).toEqual([
            {
              debit_account: "chain",
              credit_account: `uncollected:${wallet?.wallet_id}`,
              amount: "12500000",
              kind: "deposit"
            }
          ])
          const client = yield* TestClient
          const search = asRecord((yield* client.request("GET", `/v1/transactions?q=${tx}`, { apiKey })).body)
          expect(search.total).toBe(1)
          expect(
            asRecord(
              (yield* client.request("GET", `/v1/transactions?q=${id}&status=confirmed&type=deposit`, { apiKey })).body
            ).total
          ).toBe(1)
        })
    )

    it.effect("partial, late, double and wrong-asset payments on BEP20", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant()
        // partial then the rest
        const partial = yield* createOrder(apiKey, { amount: "10", chain: "BEP20" })
        yield* pay("BEP20-USDT", String(partial.pay_address), "4")
        const half = yield* eventually(
          order(apiKey, String(partial.order_id)),
          (o) => o.paid_amount === "4.000000" && o.status === "PENDING",
          20_000
        )
        expect(half.status).toBe("PENDING")
        yield* pay("BEP20-USDT", String(partial.pay_address), "6")
        expect((yield* untilStatus(apiKey, String(partial.order_id), "PAID")).paid_amount).toBe("10.000000")

        // twice: an overpayment is PAID with the whole amount recorded
        const twice = yield* createOrder(apiKey, { amount: "2", chain: "BEP20" })
        yield* pay("BEP20-USDT", String(twice.pay_address), "2")
        yield* pay("BEP20-USDT", String(twice.pay_address), "2")
        const over = yield* eventually(
          order(apiKey, String(twice.order_id)),
          (o) => o.paid_amount === "4.000000",
          20_000
        )
        expect(over.status).toBe("PAID")

        // late: paid after it expired, still credited and PAID with late_payment
        const late = yield* createOrder(apiKey, { amount: "3", chain: "BEP20" })
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE orders SET expire_at = now() - interval '1 second' WHERE id = ${String(late.order_id)}`
        yield* untilStatus(apiKey, String(late.order_id), "EXPIRED")
        yield* pay("BEP20-USDT", String(late.pay_address), "3")
        const latePaid = yield* untilStatus(apiKey, String(late.order_id), "PAID")
        expect(latePaid.late_payment).toBe(true)

        // wrong asset: BNB to a USDT-only order is recorded and visible, not counted
        const wrong = yield* createOrder(apiKey, { amount: "5", chain: "BEP20" })
        const tx = yield* pay("BEP20-BNB", String(wrong.pay_address), "0.01")
        const client = yield* TestClient
        const seen = yield* eventually(
          Effect.map(client.request("GET", `/v1/transactions?q=${tx}`, { apiKey }), (r) => asRecord(r.body)),
          (b) => Array.isArray(b.items) && b.items.some((i) => asRecord(i).status === "confirmed"),
          20_000
        )
        expect(Array.isArray(seen.items) ? asRecord(seen.items[0]) : {}).toMatchObject({
          currency: "BNB",
          amount: "0.01",
          order_id: String(wrong.order_id)
        })
        expect(yield* order(apiKey, String(wrong.order_id))).toMatchObject({ status: "PENDING", paid_amount: "0" })
      })
    )

    it.effect("deposits to long-term addresses on each chain are confirmed with wallet.deposit.confirmed", () =>
      Effect.gen(function* () {
        const client = yield* TestClient
        const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const cases = [
          ["TRC20", "USDT", "7.25"],
          ["BEP20", "USDT", "1.5"],
          ["SOLANA", "USDT", "2.75"],
          ["SOLANA", "SOL", "0.5"]
        ] as const
        for (const [chain, currency, amount] of cases) {
          const address = asRecord(
            (yield* client.request("POST", "/v1/deposit-addresses", {
              apiKey,
              json: { external_user_id: "player-1", chain, currency }
            })).body
          )
          const tx = yield* pay(`${chain}-${currency}`, String(address.address), amount)
          const txs = yield* eventually(
            Effect.map(
              client.request("GET", `/v1/deposit-addresses/${String(address.id)}/transactions`, { apiKey }),
              (r) => asRecord(r.body)
            ),
            (b) => Array.isArray(b.items) && b.items.some((i) => asRecord(i).status === "confirmed"),
            30_000
          )
          const item = Array.isArray(txs.items) ? asRecord(txs.items[0]) : {}
          expect(item, `${chain}-${currency}`).toMatchObject({
            status: "confirmed",
            amount,
            currency,
            tx_hash: tx,
            deposit_address_id: String(address.id)
          })
          const sql = yield* SqlClient.SqlClient
          const [event] = yield* sql<{ idempotency_key: string; body: string }>`
            SELECT idempotency_key, body FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed'
            AND body::jsonb ->> 'tx_hash' = ${tx}`
          expect(event?.idempotency_key).toBe(
            `wallet.deposit.confirmed:${chain}:${currency}:${tx}:${String(address.address)}:${String(item.event_index)}`
          )
          // the body is built in SQL: it must be exactly the receiver's schema, fields in its order
          const body = Schema.decodeUnknownSync(Schema.parseJson(WalletDepositWebhook))(event?.body ?? "")
          expect(body).toMatchObject({
            external_user_id: "player-1",
            amount,
            deposit_address_id: String(address.id),
            chain,
            currency,
            tx_hash: tx
          })
          expect(Object.keys(JSON.parse(event?.body ?? "{}"))).toEqual(Object.keys(WalletDepositWebhook.fields))
          expect(new Date(body.confirmed_at).toISOString()).toBe(body.confirmed_at)
          expect(
            webhookProblem("wallet.deposit.confirmed", event?.idempotency_key ?? "", event?.body ?? "")
          ).toBeUndefined()
        }
        const sql = yield* SqlClient.SqlClient
        const ids = yield* sql<{ id: string }>`SELECT id FROM webhook_events WHERE merchant_id = ${merchantId}`
        for (const { id } of ids) expect(id).toMatch(/^evt_[0-9a-hjkmnp-tv-z]{24}$/)
        // without per-row foreign keys on the hot tables, integrity is checked here instead: every
        // reference resolves, and every account's posted totals equal the sums of its transfers
        const [check] = yield* sql<{ dangling: number; projection_off: number }>`
          SELECT
            (SELECT count(*)::int FROM transactions t WHERE t.merchant_id = ${merchantId} AND (
               NOT EXISTS (SELECT 1 FROM wallets w WHERE w.id = t.wallet_id AND w.merchant_id = t.merchant_id)
               OR (t.deposit_address_id IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM deposit_addresses d WHERE d.id = t.deposit_address_id AND d.wallet_id = t.wallet_id AND d.currency = t.currency))))
              AS dangling,
            (SELECT count(*)::int FROM ledger_balances b WHERE
               b.debits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                                   WHERE l.debit_account = b.account AND l.chain = b.chain AND l.currency = b.currency)
               OR b.credits_posted <> (SELECT coalesce(sum(l.amount), 0) FROM ledger_transfers l
                                       WHERE l.credit_account = b.account AND l.chain = b.chain AND l.currency = b.currency))
              AS projection_off`
        expect(check).toEqual({ dangling: 0, projection_off: 0 })
        const [{ entries, deposits }] = yield* sql<{ entries: number; deposits: number }>`
          SELECT (SELECT count(*)::int FROM ledger_transfers l JOIN transactions t ON t.id = l.reference WHERE t.merchant_id = ${merchantId}) AS entries,
                 (SELECT count(*)::int FROM transactions WHERE merchant_id = ${merchantId} AND status = 'confirmed') AS deposits`
        expect(entries).toBe(deposits)
      })
    )

    it.effect("references are checked per statement, parents are never deleted and the ledger is append-only", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { merchantId } = yield* onboardMerchant()
        const refused = (statement: Effect.Effect<unknown, unknown>) =>
          Effect.map(Effect.either(statement), (e) => e._tag === "Left")
        for (const table of ["merchants", "wallets", "deposit_addresses", "orders", "ledger_transfers"]) {
          expect(yield* refused(sql`DELETE FROM ${sql(table)} WHERE false`), table).toBe(true)
        }
        expect(yield* refused(sql`UPDATE merchants SET id = id WHERE false`)).toBe(true)
        const row = (walletId: string, n: number) => ({
          id: `txn_ref${n}`,
          merchant_id: merchantId,
          type: "deposit",
          status: "pending",
          chain: "TRC20",
          currency: "USDT",
          amount: "1",
          tx_hash: `ref-${n}`,
          event_index: 0,
          to_address: "TNowhere",
          wallet_id: walletId
        })
        const [wallet] = yield* sql<{ id: string }>`SELECT id FROM wallets LIMIT 1`
        // one bad row among good ones fails the whole statement
        expect(
          yield* refused(sql`INSERT INTO transactions ${sql.insert([row(wallet?.id ?? "", 1), row("wal_missing", 2)])}`)
        ).toBe(true)
        // merchants are checked once per distinct merchant of the statement: a missing one among good rows
        expect(
          yield* refused(
            sql`INSERT INTO transactions ${sql.insert([row(wallet?.id ?? "", 6), { ...row(wallet?.id ?? "", 7), merchant_id: "mch_missing" }])}`
          )
        ).toBe(true)
        expect(
          yield* refused(
            sql`INSERT INTO webhook_events ${sql.insert([
              { id: "evt_ok", merchant_id: merchantId, event: "e", idempotency_key: "k1", body: "{}" },
              { id: "evt_y", merchant_id: "mch_missing", event: "e", idempotency_key: "k2", body: "{}" }
            ])}`
          )
        ).toBe(true)
        expect(
          yield* refused(
            sql`INSERT INTO ledger_balances (account, chain, currency, kind, merchant_id, wallet_id) VALUES ('uncollected:wal_missing', 'TRC20', 'USDT', 'uncollected', ${merchantId}, 'wal_missing')`
          )
        ).toBe(true)
        expect(
          yield* refused(
            sql`INSERT INTO ledger_transfers (debit_account, credit_account, chain, currency, amount, kind, reference) VALUES ('chain', 'chain', 'TRC20', 'USDT', 1, 'deposit', 'x')`
          )
        ).toBe(true)
        expect(yield* refused(sql`UPDATE ledger_transfers SET amount = amount WHERE false`)).toBe(true)
        expect(
          yield* refused(
            sql`INSERT INTO webhook_events (id, merchant_id, event, idempotency_key, body) VALUES ('evt_x', 'mch_missing', 'e', 'k', '{}')`
          )
        ).toBe(true)
        expect(yield* refused(sql`INSERT INTO transactions ${sql.insert([row(wallet?.id ?? "", 3)])}`)).toBe(false)
        // a deposit address must belong to the row's wallet
        const client = yield* TestClient
        const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        const address = asRecord(
          (yield* client.request("POST", "/v1/deposit-addresses", {
            apiKey,
            json: { external_user_id: "ref", chain: "TRC20", currency: "USDT" }
          })).body
        )
        const [other] = yield* sql<{
          id: string
        }>`SELECT id FROM wallets WHERE id <> ${String(address.wallet_id)} LIMIT 1`
        const withAddress = (walletId: string, n: number) => ({
          ...row(walletId, n),
          deposit_address_id: String(address.id)
        })
        expect(yield* refused(sql`INSERT INTO transactions ${sql.insert([withAddress(other?.id ?? "", 4)])}`)).toBe(
          true
        )
        expect(
          yield* refused(sql`INSERT INTO transactions ${sql.insert([withAddress(String(address.wallet_id), 5)])}`)
        ).toBe(false)
      })
    )

    it.effect(
      "a reorg that drops a detected payment reverses it and restores the order; one that keeps it attributes it once",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const file = yield* devnet
          const { apiKey, merchantId } = yield* onboardMerchant()
          // every block from `from` on replaced (the devnet counts the depth against its head as it is then)
          const reorg = (from: number, keep: boolean) =>
            Effect.promise(() =>
              fetch(`${file.tron.url}/devnet/reorg`, {
                method: "POST",
                body: JSON.stringify({ from, keep_transactions: keep })
              })
            )

          const dropped = yield* createOrder(apiKey, { amount: "5" })
          const tx = yield* pay("TRC20-USDT", String(dropped.pay_address), "5")
          yield* untilStatus(apiKey, String(dropped.order_id), "CONFIRMING")
          const [row] = yield* sql<{
            block_number: string
          }>`SELECT block_number::text AS block_number FROM transactions WHERE tx_hash = ${tx}`
          yield* reorg(Number(row?.block_number ?? 0), false)
          const restored = yield* untilStatus(apiKey, String(dropped.order_id), "PENDING")
          expect(restored.paid_amount).toBe("0")
          const [reversed] = yield* sql<{ status: string }>`SELECT status FROM transactions WHERE tx_hash = ${tx}`
          expect(reversed?.status).toBe("reversed")
          expect((yield* events(String(dropped.order_id))).map((e) => e.idempotency_key.split(":").pop())).toContain(
            "payment.reversed"
          )
          const [balance] = yield* sql<{
            n: string
          }>`SELECT count(*) AS n FROM merchant_balances WHERE merchant_id = ${merchantId}`
          expect(balance?.n).toBe("0")

          const kept = yield* createOrder(apiKey, { amount: "6" })
          const tx2 = yield* pay("TRC20-USDT", String(kept.pay_address), "6")
          yield* untilStatus(apiKey, String(kept.order_id), "CONFIRMING")
          const [row2] = yield* sql<{
            block_number: string
          }>`SELECT block_number::text AS block_number FROM transactions WHERE tx_hash = ${tx2}`
          yield* reorg(Number(row2?.block_number ?? 0), true)
          const paid = yield* untilStatus(apiKey, String(kept.order_id), "PAID", 30_000)
          expect(paid.paid_amount).toBe("6.000000")
          const rows = yield* sql<{ status: string }>`SELECT status FROM transactions WHERE tx_hash = ${tx2}`
          expect(rows.map((r) => r.status)).toEqual(["confirmed"])
          const [final] = yield* sql<{
            uncollected: string
          }>`SELECT uncollected::text AS uncollected FROM merchant_balances WHERE merchant_id = ${merchantId}`
          expect(final?.uncollected).toBe("6")
        })
    )

    // the same payment reorganised out and back twice within the confirmation depth: before, the second
    // reversal and restoration reused the first ones' keys and were never delivered
    it.effect(
      "a payment reversed and restored twice announces each time: the n-th key ends in #n, the body's event stays plain",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const file = yield* devnet
          const { apiKey } = yield* onboardMerchant()
          const placed = yield* createOrder(apiKey, { amount: "7" })
          const tx = yield* pay("TRC20-USDT", String(placed.pay_address), "7")
          const id = String(placed.order_id)
          yield* untilStatus(apiKey, id, "CONFIRMING")
          const keysOf = Effect.map(events(id), (rows) =>
            rows.map((e) => e.idempotency_key.slice(e.idempotency_key.lastIndexOf(":") + 1))
          )
          for (const n of [1, 2]) {
            const suffix = n === 1 ? "" : `#${n}`
            // the block that holds it, replaced by one that holds it again (the devnet counts the depth itself)
            const [row] = yield* sql<{
              block_number: string
            }>`SELECT block_number::text AS block_number FROM transactions WHERE tx_hash = ${tx} AND status <> 'reversed'`
            const answer = yield* Effect.promise(async () =>
              (
                await fetch(`${file.tron.url}/devnet/reorg`, {
                  method: "POST",
                  body: JSON.stringify({ from: Number(row?.block_number ?? 0), keep_transactions: true })
                })
              ).json()
            )
            expect(asRecord(answer).result).toBe(true)
            yield* eventually(
              keysOf,
              (keys) => keys.includes(`payment.reversed${suffix}`) && keys.includes(`payment.restored${suffix}`),
              20_000
            )
          }
          const all = yield* events(id)
          const reorgEvents = all.filter((e) => /payment\.(reversed|restored)/.test(e.idempotency_key))
          expect(reorgEvents.map((e) => e.idempotency_key.slice(e.idempotency_key.lastIndexOf(":") + 1))).toEqual([
            "payment.reversed",
            "payment.restored",
            "payment.reversed#2",
            "payment.restored#2"
          ])
          expect(reorgEvents.map((e) => asRecord(JSON.parse(e.body)).event)).toEqual([
            "payment.reversed",
            "payment.restored",
            "payment.reversed",
            "payment.restored"
          ])
          // the signed body says which reversal or restoration it is, and the key's `#n` is made from it
          expect(reorgEvents.map((e) => asRecord(JSON.parse(e.body)).occurrence)).toEqual([1, 1, 2, 2])
          expect(reorgEvents.every((e) => e.idempotency_key.startsWith(`deposit:TRC20:USDT:${tx}:`))).toBe(true)
          // a receiver derives each key from its signed body (the `#n` from `occurrence`) and compares
          for (const e of all) expect(webhookProblem("order.updated", e.idempotency_key, e.body)).toBeUndefined()
          yield* untilStatus(apiKey, id, "PAID", 30_000)
        })
    )

    // before: paid in TRX to a user's shared address before that user had a TRX deposit address, the
    // deposit was credited at confirmation but never announced (no deposit address on the row)
    it.effect(
      "a shared address paid in an asset whose deposit address is made while the payment is pending: announced at confirmation with that address",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const client = yield* TestClient
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          const address = (currency: string) =>
            Effect.map(
              client.request("POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: "shared-user", chain: "TRC20", currency }
              }),
              (r) => asRecord(r.body)
            )
          const usdt = yield* address("USDT")
          const tx = yield* pay("TRC20-TRX", String(usdt.address), "3")
          yield* eventually(
            sql<{ status: string }>`SELECT status FROM transactions WHERE tx_hash = ${tx}`,
            (rows) => rows[0]?.status === "pending",
            10_000
          )
          const trx = yield* address("TRX")
          expect(trx.address).toBe(usdt.address)
          const [event] = yield* eventually(
            sql<{
              body: string
            }>`SELECT body FROM webhook_events WHERE merchant_id = ${merchantId} AND event = 'wallet.deposit.confirmed'`,
            (rows) => rows.length === 1,
            20_000
          )
          expect(asRecord(JSON.parse(event?.body ?? "{}"))).toMatchObject({
            deposit_address_id: trx.id,
            external_user_id: "shared-user",
            currency: "TRX",
            amount: "3",
            tx_hash: tx
          })
        })
    )
  })
})
