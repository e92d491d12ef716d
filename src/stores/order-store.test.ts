import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestDatabaseLive } from "../../test/database.js"
import { OrderStore } from "./order-store.js"

/** A merchant with one receive wallet per network, and an order payable in USDT on TRC20 and USDC on BEP20. */
const seed = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const store = yield* OrderStore
  yield* sql`INSERT INTO merchants (id, merchant_no, application_id, project_name, project_key, business_type, use_case, integration_mode, application, webhook_secret)
             VALUES ('mch_o', 'M1', 'a1', 'Shop', 'p', 'b', 'u', 'checkout', '{}', 'whsec_x')`
  yield* sql`INSERT INTO wallets (id, merchant_id, kind, purpose, network, family, address, derivation_path, key_account, address_index)
             VALUES ('wal_t', 'mch_o', 'receive', 'order', 'TRC20', 'TRON', 'TAddr', 'p/0', 9, 1),
                    ('wal_b', 'mch_o', 'receive', 'order', 'BEP20', 'EVM', '0xaddr', 'p/1', 9, 2)`
  yield* store.insert(
    {
      id: "ord_1",
      merchant_id: "mch_o",
      out_trade_no: "T-1",
      status: "PENDING",
      amount: "20",
      currency: "USDT",
      chain: "TRC20",
      checkout_mode: "multi_asset",
      exchange_rate: null,
      pay_address: "TAddr",
      wallet_id: "wal_t",
      notify_url: null,
      return_url: null,
      merchant_user_id: null,
      product_name: "Tea",
      product_desc: null,
      metadata: JSON.stringify({ cart: 7 }),
      expire_at: new Date(Date.now() + 15 * 60_000)
    },
    [
      {
        order_id: "ord_1",
        position: 0,
        chain: "TRC20",
        currency: "USDT",
        wallet_id: "wal_t",
        pay_address: "TAddr",
        amount: "20",
        pay_qrcode: null,
        underpayment_tolerance: "0.2"
      },
      {
        order_id: "ord_1",
        position: 1,
        chain: "BEP20",
        currency: "USDC",
        wallet_id: "wal_b",
        pay_address: "0xaddr",
        amount: "20.5",
        pay_qrcode: "ethereum:0xaddr",
        underpayment_tolerance: "0"
      }
    ]
  )
})

describe("order store", () => {
  layer(OrderStore.Default.pipe(Layer.provideMerge(TestDatabaseLive)), { excludeTestServices: true })((it) => {
    it.effect("reads, settles and resets an order as its callers need it", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const store = yield* OrderStore
        yield* seed

        const order = yield* store.find("mch_o", "ord_1")
        expect(Option.map(order, (o) => [o.status, o.amount, o.metadata])).toEqual(
          Option.some(["PENDING", "20", { cart: 7 }])
        )
        expect(yield* store.find("mch_other", "ord_1")).toEqual(Option.none())
        expect((yield* store.assetsOf(["ord_1"])).map((a) => a.position)).toEqual([0, 1])
        const page = yield* store.list("mch_o", { chain: "TRC20" }, { limit: 10, offset: 0 })
        expect([page.total, page.rows.map((r) => r.id)]).toEqual([1, ["ord_1"]])
        expect((yield* store.list("mch_o", { status: "PAID" }, { limit: 10, offset: 0 })).total).toBe(0)

        const checkout = yield* store.checkoutOrder("ord_1")
        expect(Option.map(checkout, (o) => o.merchant_name)).toEqual(Option.some("Shop"))
        expect((yield* store.checkoutAssets("ord_1")).map((a) => a.currency)).toEqual(["USDT", "USDC"])

        // an indexer's settlement, in its block's transaction
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const locked = yield* store.lockForSettlement("ord_1")
            expect(Option.map(locked, (o) => [o.status, o.expired, o.amount, o.digits])).toEqual(
              Option.some(["PENDING", false, "20", 6])
            )
            expect(yield* store.askedAssets("ord_1")).toEqual([
              { chain: "TRC20", currency: "USDT", asked: "20", tolerance: "0.2" },
              { chain: "BEP20", currency: "USDC", asked: "20.5", tolerance: "0" }
            ])
            // paid within the TRC20 asset's tolerance
            yield* store.writeSettlement("ord_1", {
              status: "PAID",
              txHash: "tx-1",
              latePayment: false,
              paidAmount: "19.9",
              underpaidAmount: "0.1"
            })
          })
        )
        const underpaid = yield* store.find("mch_o", "ord_1")
        expect(Option.map(underpaid, (o) => [o.status, o.paid_amount, o.underpaid_amount])).toEqual(
          Option.some(["PAID", "19.9", "0.1"])
        )
        expect(Option.map(yield* store.checkoutOrder("ord_1"), (o) => o.underpaid_amount)).toEqual(Option.some("0.1"))
        expect(yield* store.lockForSettlement("ord_missing")).toEqual(Option.none())
        expect(yield* store.assetsOfWallets("TRC20", ["wal_t", "wal_b"])).toEqual([
          { order_id: "ord_1", wallet_id: "wal_t", currency: "USDT", asset_amount: "20", order_amount: "20" }
        ])
        expect(yield* store.assetsOfWallets("TRC20", [])).toEqual([])

        // the devnet reset: back to unpaid, once
        expect(yield* store.resetToUnpaid).toBe(1)
        expect(yield* store.resetToUnpaid).toBe(0)
        const reset = yield* store.find("mch_o", "ord_1")
        expect(Option.map(reset, (o) => [o.status, o.paid_amount, o.tx_hash, o.underpaid_amount])).toEqual(
          Option.some(["PENDING", "0", null, null])
        )
      })
    )
  })
})
