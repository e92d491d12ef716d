import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { decodeInternalTrxTransfers, TronTransactionInfo } from "../src/chains/tron/tron-decoding.js"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import { payFromCustomer, payThroughTronForwarder } from "../src/devnet/devnet-payments.js"
import { Schema } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { readDevnetFile } from "../test/service-process.js"
import { eventually } from "../test/webhook-receiver.js"
import { rescan } from "./rescan.js"

// a TRON finality window wide enough to reorg inside
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CONFIRMATIONS_TRC20: "8" } })

const TRX = 1_000_000n

describe("TRX sent by a contract (TRON internal transactions)", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect(
      "three legs of one call are three deposits; a rejected leg credits nothing; an order paid through a contract is PAID; a reorg reverses the legs; re-reading credits nothing twice",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const sql = yield* SqlClient.SqlClient
          const devnet = yield* Effect.flatMap(AppConfig, (config) => readDevnetFile(config.dataDir))
          const { apiKey } = yield* onboardMerchant({ integration_mode: "hybrid" })
          const addressOf = (user: string) =>
            Effect.map(
              client.request("POST", "/v1/deposit-addresses", {
                apiKey,
                json: { external_user_id: user, chain: "TRC20", currency: "TRX" }
              }),
              (r) => String(asRecord(r.body).address)
            )
          const alice = yield* addressOf("alice")
          const bob = yield* addressOf("bob")
          const carol = yield* addressOf("carol")
          const deposits = (txs: ReadonlyArray<string>) =>
            sql<{ tx_hash: string; to_address: string; event_index: number; amount: string; status: string }>`
            SELECT tx_hash, to_address, event_index, trim_scale(amount)::text AS amount, status FROM transactions
            WHERE type = 'deposit' AND chain = 'TRC20' AND currency = 'TRX' AND tx_hash IN ${sql.in(txs)} ORDER BY tx_hash, event_index DESC`
          const name = (address: string) =>
            address === alice ? "alice" : address === bob ? "bob" : address === carol ? "carol" : address

          // split3: three legs in one transaction, two of them to bob
          const split = yield* payThroughTronForwarder(devnet, "split3", [alice, bob, bob], 3n * TRX)
          const rejected = yield* payThroughTronForwarder(devnet, "tryForward", [carol], 2n * TRX)
          // a later direct payment to carol: once it is final, the block of the rejected leg was read too
          const direct = yield* payFromCustomer(devnet, "TRC20-TRX", carol, "0.5")
          const rows = yield* eventually(
            deposits([split, rejected, direct]),
            (r) => r.length === 4 && r.every((t) => t.status === "confirmed"),
            60_000
          )
          expect(
            rows
              .map(
                (r) =>
                  `${r.tx_hash === split ? "split" : r.tx_hash === direct ? "direct" : "rejected"} ${name(r.to_address)} ${r.amount} ${r.event_index}`
              )
              .sort()
          ).toEqual(["direct carol 0.5 -1", "split alice 1 -2", "split bob 1 -3", "split bob 1 -4"])
          const [hooks] = yield* sql<{ n: number; keys: number }>`
          SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM webhook_events
          WHERE event = 'wallet.deposit.confirmed' AND idempotency_key LIKE ${`%:${split}:%`}`
          expect(hooks).toEqual({ n: 3, keys: 3 })

          // the devnet's answer is java-tron's shape, and decodes to exactly the legs that moved TRX
          const info = yield* Effect.promise(() =>
            fetch(`${devnet.tron.url}/wallet/gettransactioninfobyid`, {
              method: "POST",
              body: JSON.stringify({ value: rejected })
            }).then((r) => r.json())
          )
          const decoded = yield* Schema.decodeUnknown(TronTransactionInfo)(info)
          expect(decoded.receipt?.result).toBe("SUCCESS")
          expect(decoded.internal_transactions?.map((leg) => [leg.rejected, leg.note, leg.callValueInfo])).toEqual([
            [true, "63616c6c", [{ callValue: 2_000_000 }]],
            [true, "63616c6c", [{ callValue: 2_000_000 }]]
          ])
          expect(decodeInternalTrxTransfers([decoded], { number: 1n, hash: "h", parentHash: "p" })).toEqual([])

          // an order paid through a contract call
          const order = asRecord(
            (yield* client.request("POST", "/v1/orders", {
              apiKey,
              json: { amount: "2", chain: "TRC20", currency: "TRX", out_trade_no: "via-contract" }
            })).body
          )
          yield* payThroughTronForwarder(devnet, "forward", [String(order.pay_address)], 2n * TRX)
          const paid = yield* eventually(
            client.request("GET", `/v1/orders/${String(order.order_id)}`, { apiKey }),
            (r) => asRecord(r.body).status === "PAID",
            60_000
          )
          expect(asRecord(paid.body).paid_amount).toBe("2.000000")

          // a reorg that drops the block of a split reverses both legs
          const dropped = yield* payThroughTronForwarder(devnet, "split", [alice, carol], 4n * TRX)
          const seen = yield* eventually(deposits([dropped]), (r) => r.length === 2, 30_000)
          expect(seen.every((r) => r.status !== "confirmed")).toBe(true)
          const [mined] = yield* sql<{
            block_number: string
          }>`SELECT block_number::text AS block_number FROM transactions WHERE tx_hash = ${dropped} LIMIT 1`
          // every block from the one that holds it on (the devnet counts the depth against its head then)
          yield* Effect.promise(() =>
            fetch(`${devnet.tron.url}/devnet/reorg`, {
              method: "POST",
              body: JSON.stringify({ from: Number(mined?.block_number ?? 0), keep_transactions: false })
            })
          )
          const reversed = yield* eventually(
            deposits([dropped]),
            (r) => r.length === 2 && r.every((t) => t.status === "reversed"),
            30_000
          )
          expect(reversed.map((r) => r.event_index).sort((a, b) => a - b)).toEqual([-3, -2])

          // re-reading the final blocks (an operator's rescan, a restart's catch-up) credits nothing twice
          const tron = yield* Effect.flatMap(ChainClients, (clients) =>
            Option.match(clients.get("TRC20"), {
              onNone: () => Effect.dieMessage("no TRON client"),
              onSome: Effect.succeed
            })
          )
          const [range] = yield* sql<{ low: string; high: string }>`
          SELECT min(block_number)::text AS low, max(block_number)::text AS high FROM transactions WHERE tx_hash IN (${split}, ${rejected}, ${direct})`
          const reread = yield* rescan(tron, BigInt(range?.low ?? "0"), BigInt(range?.high ?? "0"), 10)
          expect(reread.added).toBe(0)
          expect(yield* deposits([split, rejected, direct])).toHaveLength(4)
        })
    )
  })
})
