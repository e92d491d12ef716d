import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestDatabaseLive } from "../../test/database.js"
import { type DepositKeyParts, depositConfirmedKey, paymentEventKey, WebhookStore } from "./webhook-store.js"

const trc20: DepositKeyParts = {
  chain: "TRC20",
  currency: "USDT",
  tx_hash: "abc123",
  to_address: "TAddr",
  event_index: 0
}
const deposits: ReadonlyArray<DepositKeyParts> = [
  trc20,
  {
    chain: "BEP20",
    currency: "USDC",
    tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    to_address: "0x52908400098527886E0F7030069857D2E4169EE7",
    event_index: 2147483647
  },
  // a signature and address of base58 and an instruction index: the parts as the chain spells them
  {
    chain: "SOLANA",
    currency: "SOL",
    tx_hash: "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW",
    to_address: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
    event_index: 17
  }
]

/** What a SQL key expression over the alias `c` gives for one deposit's parts, on the test database. */
const evaluate = (expression: (alias: string) => ReturnType<WebhookStore["depositConfirmedKeySql"]>) =>
  Effect.fn(function* (d: DepositKeyParts) {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ key: string }>`
      SELECT ${expression("c")} AS key
      FROM (SELECT ${d.chain}::text AS chain, ${d.currency}::text AS currency, ${d.tx_hash}::text AS tx_hash,
                   ${d.to_address}::text AS to_address, ${d.event_index}::int AS event_index) c`
    return row?.key
  })

describe("webhook store", () => {
  layer(WebhookStore.Default.pipe(Layer.provideMerge(TestDatabaseLive)), { excludeTestServices: true })((it) => {
    it.effect("the SQL form of each deposit key gives what the TypeScript form gives, for the same row", () =>
      Effect.gen(function* () {
        const store = yield* WebhookStore
        for (const d of deposits) {
          expect(yield* evaluate(store.depositConfirmedKeySql)(d)).toBe(depositConfirmedKey(d))
          for (const bodyEvent of ["payment.detected", "payment.reversed"]) {
            expect(yield* evaluate((alias) => store.paymentEventKeySql(alias, bodyEvent))(d)).toBe(
              paymentEventKey(d, bodyEvent)
            )
          }
        }
        expect(depositConfirmedKey(trc20)).toBe("wallet.deposit.confirmed:TRC20:USDT:abc123:TAddr:0")
      })
    )

    it.effect("the deposit events fragment announces each confirmed deposit of the caller's CTE once", () =>
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret, webhook_url)
                   VALUES ('mch_deposits', 'M2', 'a2', 'p2', 'p2', 'b', 'u', 'exchange_wallet', '{}', 'whsec_y', 'https://merchant.example/hooks')`
        // a confirmed deposit to a deposit address and one to an order (announced by its order's events)
        const write = sql`
          WITH confirmed AS (
            SELECT * FROM (VALUES
              ('txn_a', 'evt_a', 'dep_1', 'alice'),
              ('txn_b', 'evt_b', NULL, NULL)
            ) v(id, event_id, deposit_address_id, external_user_id)
            CROSS JOIN LATERAL (SELECT 'mch_deposits' AS merchant_id, 'wal_1' AS wallet_id, ${trc20.chain}::text AS chain,
              ${trc20.currency}::text AS currency, 12.50::numeric AS amount, ${trc20.tx_hash}::text AS tx_hash, 'TFrom' AS from_address,
              ${trc20.to_address}::text AS to_address, ${trc20.event_index}::int AS event_index, 7::bigint AS block_number,
              19 AS confirmations, '2026-11-22T00:00:00Z'::timestamptz AS confirmed_at) d
          ),
          ${store.depositConfirmedEvents("confirmed", "2026-11-22T00:00:01.000Z")}
          SELECT 1`
        yield* write
        yield* write
        const events = yield* sql<{
          id: string
          idempotency_key: string
          destination: string
          status: string
          body: string
        }>`
          SELECT id, idempotency_key, destination, status, body FROM webhook_events WHERE merchant_id = 'mch_deposits'`
        expect(events.map(({ body: _, ...event }) => event)).toEqual([
          {
            id: "evt_a",
            idempotency_key: depositConfirmedKey(trc20),
            destination: "https://merchant.example/hooks",
            status: "pending"
          }
        ])
        expect(JSON.parse(events[0]?.body ?? "null")).toEqual({
          event: "wallet.deposit.confirmed",
          deposit_address_id: "dep_1",
          external_user_id: "alice",
          wallet_id: "wal_1",
          chain: "TRC20",
          currency: "USDT",
          amount: "12.5",
          tx_hash: "abc123",
          from_address: "TFrom",
          to_address: "TAddr",
          event_index: 0,
          block_number: 7,
          confirmations: 19,
          confirmed_at: "2026-11-22T00:00:00.000Z",
          created_at: "2026-11-22T00:00:01.000Z"
        })
      })
    )

    it.effect("the n-th reversal or restoration of a payment is counted, and its key ends in #n", () =>
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('mch_keys', 'M1', 'a1', 'p', 'p', 'b', 'u', 'checkout', '{}', 'whsec_x')`
        const payment = { merchant_id: "mch_keys", ...trc20 }
        const first = yield* store.paymentOccurrence(payment, "payment.reversed")
        expect(first).toBe(1)
        expect(paymentEventKey(payment, "payment.reversed", first)).toBe(
          "deposit:TRC20:USDT:abc123:TAddr:0:payment.reversed"
        )
        const announce = (key: string) =>
          store.insertEvent({
            merchantId: payment.merchant_id,
            event: "order.updated",
            idempotencyKey: key,
            orderId: null,
            destination: null,
            body: "{}"
          })
        yield* announce(paymentEventKey(payment, "payment.reversed", first))
        const second = yield* store.paymentOccurrence(payment, "payment.reversed")
        expect(second).toBe(2)
        expect(paymentEventKey(payment, "payment.reversed", second)).toBe(
          "deposit:TRC20:USDT:abc123:TAddr:0:payment.reversed#2"
        )
        yield* announce(paymentEventKey(payment, "payment.reversed", second))
        expect(yield* store.paymentOccurrence(payment, "payment.reversed")).toBe(3)
        // restorations are counted apart from reversals
        expect(yield* store.paymentOccurrence(payment, "payment.restored")).toBe(1)
        // detections and confirmations happen once: no count, no suffix
        yield* announce(paymentEventKey(payment, "payment.detected"))
        expect(yield* store.paymentOccurrence(payment, "payment.detected")).toBe(1)
      })
    )

    it.effect("a devnet reset forgets the chains' events with their attempts and keeps the others", () =>
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
                   VALUES ('mch_reset', 'M3', 'a3', 'p3', 'p3', 'b', 'u', 'checkout', '{}', 'whsec_z')`
        const announce = (event: string, key: string) =>
          store.insertEvent({
            merchantId: "mch_reset",
            event,
            idempotencyKey: key,
            orderId: null,
            destination: "https://merchant.example/hooks",
            body: "{}"
          })
        yield* announce("order.updated", paymentEventKey(trc20, "payment.detected"))
        yield* announce("wallet.withdrawal.failed", "wallet.withdrawal.failed:wd_1:")
        yield* announce("order.updated", "ord_1:order.expired:EXPIRED")
        // an attempt at the payment's event: it goes with its event (the attempt refers to it)
        const [payment] = yield* sql<{ id: string }>`
          SELECT id FROM webhook_events WHERE idempotency_key = ${paymentEventKey(trc20, "payment.detected")}`
        const at = new Date()
        yield* store.recordAttempt(
          {
            eventId: payment?.id ?? "",
            attempt: 1,
            destination: "https://merchant.example/hooks",
            startedAt: at,
            finishedAt: at,
            statusCode: 500,
            latencyMs: 3,
            error: "HTTP 500",
            excerpt: null
          },
          { status: "pending", nextAttemptAt: at, deliveredAt: null, deadAt: null }
        )
        const total = sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_events`
        const [before] = yield* total
        const forgotten = yield* store.forgetChainEvents
        const [after] = yield* total
        expect(forgotten).toBe((before?.n ?? 0) - (after?.n ?? 0))
        const attempts = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_attempts`
        expect(attempts[0]?.n).toBe(0)
        const left = yield* sql<{ idempotency_key: string }>`
          SELECT idempotency_key FROM webhook_events WHERE merchant_id = 'mch_reset'`
        expect(left.map((e) => e.idempotency_key)).toEqual(["ord_1:order.expired:EXPIRED"])
      })
    )
  })
})
