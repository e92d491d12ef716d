import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientOf, fundedAddress, ledgerBalances, pay } from "../test/custody-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { Reconciliation } from "../indexer/reconciliation.js"
import { MoneyDecimal, toBaseUnits } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"

// custody consolidates native coins by itself here, often (10 s in production)
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CONSOLIDATE_INTERVAL_MS: "300" } })

const RECIPIENT = "0x8ba1f109551bD432803012645Ac136ddd64DBA72"

describe("native coins are payable", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    // before: collection is off for BNB and TRX, withdrawals draw on `available` from the main wallet, and
    // only receive wallets were watched: a confirmed BNB deposit could never be withdrawn
    it.effect(
      "a 1 BNB deposit is consolidated into the main wallet by custody and a 0.3 BNB withdrawal completes; BNB sent to the main address is credited and reconciles",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const decisions = yield* WithdrawalDecisions
          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          yield* fundedAddress(apiKey, "BEP20", "BNB", "1")
          // the sweep endpoint still refuses natives, as the contract's boundary table says
          const refused = yield* client.request("POST", "/v1/wallet-assets/BEP20-BNB/sweep", {
            apiKey,
            json: { from_wallet_id: "wal_any" }
          })
          expect(refused.status).toBe(400)
          const consolidated = yield* eventually(
            ledgerBalances(merchantId, "BEP20", "BNB"),
            (b) => new MoneyDecimal(b?.available ?? "0").greaterThan("0.99"),
            60_000
          )
          // the merchant paid the consolidation's network fee out of the coins, as for a native withdrawal;
          // what was kept back for it and not burned stays uncollected (dust, consolidated when more comes)
          expect(new MoneyDecimal(consolidated?.available ?? "0").lessThan("1")).toBe(true)
          expect(new MoneyDecimal(consolidated?.uncollected ?? "1").lessThan("0.0001")).toBe(true)

          const created = yield* client.request("POST", "/v1/withdrawals", {
            apiKey,
            json: { chain: "BEP20", currency: "BNB", amount: "0.3", to_address: RECIPIENT }
          })
          expect(created.status, created.text).toBe(201)
          const id = String(asRecord(created.body).withdrawal_id)
          const bnb = yield* clientOf("BEP20")
          const before = yield* bnb.balance(RECIPIENT, "BNB")
          yield* decisions.decide(id, "APPROVED", { kind: "operator", by: "ops", from: "test" })
          const done = asRecord(
            (yield* eventually(
              client.request("GET", `/v1/withdrawals/${id}`, { apiKey }),
              (r) => ["COMPLETED", "FAILED"].includes(String(asRecord(r.body).status)),
              90_000
            )).body
          )
          expect(done.status, JSON.stringify(done)).toBe("COMPLETED")
          expect((yield* bnb.balance(RECIPIENT, "BNB")) - before).toBe(toBaseUnits(String(done.net_amount), 18))
          expect((yield* ledgerBalances(merchantId, "BEP20", "BNB"))?.locked).toBe("0")

          // coins sent from outside straight to the main address: a deposit there, available, never lost
          const main = yield* Effect.orDie(Effect.flatMap(Wallets, (w) => w.mainWallet(merchantId, "BEP20")))
          const availableBefore = new MoneyDecimal(
            (yield* ledgerBalances(merchantId, "BEP20", "BNB"))?.available ?? "0"
          )
          yield* pay("BEP20-BNB", main.address, "0.2")
          yield* eventually(
            ledgerBalances(merchantId, "BEP20", "BNB"),
            (b) => new MoneyDecimal(b?.available ?? "0").eq(availableBefore.plus("0.2")),
            60_000
          )
          // and the main address reconciles: the ledger explains its balance, the consolidation and withdrawal included
          const report = yield* Effect.flatMap(Reconciliation, (r) => r.reconcileChain("BEP20"))
          expect(report.differences.filter((d) => d.address.toLowerCase() === main.address.toLowerCase())).toEqual([])
        })
    )
  })
})
