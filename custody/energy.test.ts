import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Reconciliation } from "../indexer/reconciliation.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { asRecord } from "../test/json.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { ledgerIntegrity } from "../test/ledger-integrity.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"
import { balances, clientOf, fundedAddress, pay, sweep, untilFinished } from "../test/custody-flows.js"
import { driveOperation } from "./engine/operations-engine.js"
import { EnergySource } from "./energy.js"
import { burnedBy, lentOnChain, operationFinished, SUN } from "../test/energy-flows.js"

// the devnet gas wallet's 100,000 TRX are under this: on TRX alone TRON's gas is low (sweeps go on: only
// an empty gas wallet refuses them), and the stake's energy makes it ok
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_GAS_LOW_TRC20: "1000000" } })

const records = (value: unknown) => (Array.isArray(value) ? value.map(asRecord) : [])

/** TRC20 USDT's network in the merchant's portfolio. */
const tronNetwork = (apiKey: string) =>
  Effect.map(
    Effect.flatMap(TestClient, (c) => c.request("GET", "/v1/wallet-portfolio", { apiKey })),
    (res) => {
      expect(res.status, res.text).toBe(200)
      const usdt = records(asRecord(res.body).assets).find((a) => a.currency === "USDT")
      return records(usdt?.networks).find((n) => n.chain === "TRC20") ?? {}
    }
  )

describe("TRON energy lent from the platform's stake", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "300 seconds" })((it) => {
    it.effect("no stake: the sweep burns TRX, and its answer says why no energy could be had", () =>
      Effect.gen(function* () {
        const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
        // TRX alone (under FACET_GAS_LOW_TRC20), no stake: TRON's gas is low
        expect(yield* tronNetwork(apiKey)).toMatchObject({ gas_asset: "TRX", gas_status: "low" })
        const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "1000")
        const started = yield* sweep(apiKey, "TRC20-USDT", { from_wallet_id: receive.walletId })
        expect(started.status, started.text).toBe(200)
        expect(asRecord(started.body).energy).toMatchObject({ path: "burned" })
        expect(String(asRecord(asRecord(started.body).energy).reason)).toContain("the stake can lend 0 TRX")
        const done = yield* untilFinished(apiKey, "TRC20-USDT", String(asRecord(started.body).operation_id))
        expect(done).toMatchObject({ status: "COMPLETED", energy: { path: "burned" } })
        // the energy was paid in TRX: several TRX burned by the sweep itself
        expect(yield* burnedBy(String(done.operation_id))).toBeGreaterThan(5n * SUN)

        // a sweep accepted on the energy path's figures (10 USDT: only bandwidth and activation to pay) whose
        // energy is gone when its actor runs it burns TRX only within the gas-share rule: here it fails, and
        // nothing was funded or signed (stored by hand with kicks = 1: the resume pass leaves it to this test)
        const sql = yield* SqlClient.SqlClient
        const small = yield* fundedAddress(apiKey, "TRC20", "USDT", "10")
        const [main] = yield* sql<{ id: string; address: string; merchant_id: string }>`
          SELECT id, address, merchant_id FROM wallets WHERE address = ${String(done.to_address)}`
        const id = `op_test_${Date.now()}`
        yield* sql`
          INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address,
                                          to_wallet_id, to_address, amount, energy_path, waiting_for, kicks)
          VALUES (${id}, 'collection', 'GAS_FUNDING', ${String(main?.merchant_id)}, 'TRC20', 'USDT', ${small.walletId},
                  ${small.address}, ${String(main?.id)}, ${String(main?.address)}, 10000000, 'delegated', 'test', 1)`
        yield* driveOperation(id)
        const [failed] = yield* sql<{
          status: string
          failure_reason: string
          energy_path: string
          funding: string | null
        }>`
          SELECT status, failure_reason, energy_path, gas_funding_id AS funding FROM custody_operations WHERE id = ${id}`
        expect(failed).toMatchObject({ status: "FAILED", energy_path: "burned", funding: null })
        expect(failed?.failure_reason).toMatch(
          /is more than 5% of its value \(10 USDT ≈ 10\.00 USDT\); sweep a larger balance later \(TRX burned for its energy: the stake can lend 0 TRX/
        )
        expect(yield* burnedBy(id)).toBe(0n)
      })
    )

    it.effect(
      "staked: a sweep borrows the energy, burns no TRX for it, and the lending is taken back once it is final",
      () =>
        Effect.gen(function* () {
          const energy = yield* EnergySource
          const sql = yield* SqlClient.SqlClient
          // the operator stakes 50,000 TRX of the gas wallet for energy (what `npm run custody -- energy stake`
          // stores), and 5,000 for the wallet's own bandwidth (its lendings and the activations it pays)
          const stake = yield* energy.requestStake("energy_stake", 50_000n * SUN)
          const bandwidth = yield* energy.requestStake("bandwidth_stake", 5_000n * SUN)
          expect(yield* operationFinished(stake)).toMatchObject({ status: "COMPLETED", merchant_id: null })
          expect(yield* operationFinished(bandwidth)).toMatchObject({ status: "COMPLETED", merchant_id: null })
          const staked = yield* energy.status()
          expect(staked.staked).toBe(50_000n * SUN)
          expect(staked.bandwidthStaked).toBe(5_000n * SUN)
          expect(staked.lentOnChain).toBe(0n)

          const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          // the gas status counts the stake's energy: TRX alone would still say low (read again once 5 s old)
          yield* eventually(tronNetwork(apiKey), (n) => n.gas_status === "ok", 15_000)
          expect(yield* tronNetwork(apiKey)).toMatchObject({ gas_status: "ok" })
          // operators see the same, and why: the stake lends two transfers' energy (17,876 TRX each)
          const http = yield* TestClient
          const health = asRecord((yield* http.request("GET", "/health")).body)
          const tron = records(asRecord(health.custody).gas_wallets).find((g) => g.chain === "TRC20")
          expect(tron).toMatchObject({
            gas_status: "ok",
            energy: { lendable: "50000", per_transfer: "17876", transfers: 2 }
          })
          const metrics = (yield* http.request("GET", "/metrics")).text
          expect(metrics).toContain(`facet_gas_wallet_status{chain="TRC20",status="ok"} 1`)
          expect(metrics).toContain(`facet_gas_wallet_energy_transfers{chain="TRC20"} 2`)

          // a fresh address: its activation (the chain's creation fee) is the only TRX this sweep costs
          const receive = yield* fundedAddress(apiKey, "TRC20", "USDT", "10")
          const started = yield* sweep(apiKey, "TRC20-USDT", { from_wallet_id: receive.walletId })
          expect(started.status, started.text).toBe(200)
          expect(asRecord(started.body).energy).toEqual({ path: "delegated" })
          const done = yield* untilFinished(apiKey, "TRC20-USDT", String(asRecord(started.body).operation_id))
          expect(done, JSON.stringify(done)).toMatchObject({
            status: "COMPLETED",
            network_fee: "0",
            energy: { path: "delegated", status: "COMPLETED" },
            // 1 sun: what makes the address exist (the chain's 1.1 TRX creation fee is the gas wallet's)
            gas_funding: { status: "COMPLETED", amount: "0.000001", asset: "TRX" }
          })
          expect(yield* burnedBy(String(done.operation_id))).toBe(0n)
          const lending = asRecord(done.energy)
          expect(yield* burnedBy(String(lending.operation_id))).toBe(0n)
          // the activation: the chain's 1 TRX creation fee, its bandwidth from the stake — the sweep's whole cost
          expect(yield* burnedBy(String(asRecord(done.gas_funding).operation_id))).toBe(1n * SUN)
          const client = yield* clientOf("TRC20")
          expect(yield* client.balance(receive.address, "USDT")).toBe(0n)
          expect(yield* balances(merchantId, "TRC20", "USDT")).toEqual({ uncollected: "0", available: "10" })
          // the activation's 1 sun, the lending and its taking back are the platform's: no TRX for the merchant
          expect(yield* balances(merchantId, "TRC20", "TRX")).toBeUndefined()

          // taken back: the reclaim is a custody operation of its own, and the chain lends nothing any more
          // (stored by the service's resume pass, every 2 s)
          const [reclaim] = yield* eventually(
            sql<{ id: string; status: string }>`
              SELECT id, status FROM custody_operations WHERE type = 'energy_reclaim' AND parent_id = ${String(lending.operation_id)}`,
            (rows) => rows.length === 1,
            20_000
          )
          expect(yield* operationFinished(String(reclaim?.id))).toMatchObject({ status: "COMPLETED" })
          expect(yield* burnedBy(String(reclaim?.id))).toBe(0n)
          expect(yield* lentOnChain(0n)).toBe(0n)

          // a 3 USDT deposit to the same address: accepted (no activation now), at most 1 TRX burned
          yield* pay("TRC20-USDT", receive.address, "3")
          yield* eventually(balances(merchantId, "TRC20", "USDT"), (b) => b?.uncollected === "3", 30_000)
          const small = yield* sweep(apiKey, "TRC20-USDT", { from_wallet_id: receive.walletId })
          expect(small.status, small.text).toBe(200)
          const smallDone = yield* untilFinished(apiKey, "TRC20-USDT", String(asRecord(small.body).operation_id))
          expect(smallDone).toMatchObject({ status: "COMPLETED", energy: { path: "delegated", status: "COMPLETED" } })
          const fundingOfSmall = asRecord(smallDone.gas_funding)
          const burnedForSmall =
            (yield* burnedBy(String(smallDone.operation_id))) +
            (typeof fundingOfSmall.operation_id === "string" ? yield* burnedBy(fundingOfSmall.operation_id) : 0n)
          expect(burnedForSmall).toBeLessThanOrEqual(1n * SUN)
          expect(yield* balances(merchantId, "TRC20", "USDT")).toEqual({ uncollected: "0", available: "13" })
          expect(yield* lentOnChain(0n)).toBe(0n)

          // a taking back the node refused is tried again, ten minutes after it failed (not at once): made so by hand
          // (a refused one leaves its lending not taken back)
          yield* sql`UPDATE custody_operations SET status = 'FAILED', finished_at = clock_timestamp() WHERE id = ${String(reclaim?.id)}`
          yield* sql`UPDATE custody_operations SET taken_back_at = NULL WHERE id = ${String(lending.operation_id)}`
          const reclaimsOf = sql<{ n: number }>`
            SELECT count(*)::int AS n FROM custody_operations WHERE type = 'energy_reclaim' AND parent_id = ${String(lending.operation_id)}`
          yield* Effect.sleep("3 seconds")
          expect((yield* reclaimsOf)[0]?.n).toBe(1)
          yield* sql`UPDATE custody_operations SET finished_at = clock_timestamp() - interval '11 minutes' WHERE id = ${String(reclaim?.id)}`
          expect((yield* eventually(reclaimsOf, (rows) => rows[0]?.n === 2, 20_000))[0]?.n).toBe(2)
          // a retry reads the chain's final state first: here the first one had in fact taken it all back, so the
          // lending is over without a transaction (none signed, nothing refused again and again)
          const [again] = yield* sql<{ id: string }>`
            SELECT id FROM custody_operations WHERE type = 'energy_reclaim' AND parent_id = ${String(lending.operation_id)} AND id <> ${String(reclaim?.id)}`
          expect(yield* operationFinished(String(again?.id))).toMatchObject({ status: "COMPLETED" })
          expect(yield* burnedBy(String(again?.id))).toBe(0n)
          const [attemptsOfAgain] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM custody_transactions WHERE operation_id = ${String(again?.id)}`
          expect(attemptsOfAgain?.n).toBe(0)
          const [over] = yield* sql<{ over: boolean }>`
            SELECT taken_back_at IS NOT NULL AS over FROM custody_operations WHERE id = ${String(lending.operation_id)}`
          expect(over?.over).toBe(true)
          expect(yield* lentOnChain(0n)).toBe(0n)

          // a taking back waits while another transfer borrows at the same address: taking an earlier lending
          // back would move part of that transfer's energy use back with it (store-level: rows by hand)
          const store = yield* CustodyStore
          const [mainRow] = yield* sql<{
            id: string
          }>`SELECT id FROM wallets WHERE address = ${String(done.to_address)}`
          const busy = `op_busy_${Date.now()}`
          const otherLending = `op_lend_${Date.now()}`
          yield* sql`
            INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address,
                                            to_wallet_id, to_address, amount, waiting_for, kicks)
            VALUES (${busy}, 'collection', 'GAS_FUNDING', ${merchantId}, 'TRC20', 'USDT', ${receive.walletId},
                    ${receive.address}, ${String(mainRow?.id)}, ${String(done.to_address)}, 1, 'test', 1),
                   (${otherLending}, 'energy_delegation', 'COMPLETED', ${merchantId}, 'TRC20', 'TRX', ${receive.walletId},
                    ${staked.address}, ${receive.walletId}, ${receive.address}, 1000000, 'test', 1)`
          yield* sql`UPDATE custody_operations SET parent_id = ${busy} WHERE id = ${otherLending}`
          expect(
            Option.map(yield* store.lendingInUse(receive.address, String(lending.operation_id)), (r) => r.id)
          ).toEqual(Option.some(otherLending))
          // its transfer over, nothing holds the taking back any more
          yield* sql`UPDATE custody_operations SET status = 'FAILED' WHERE id = ${busy}`
          yield* sql`UPDATE custody_operations SET taken_back_at = clock_timestamp() WHERE id = ${otherLending}`
          expect(Option.isNone(yield* store.lendingInUse(receive.address, String(lending.operation_id)))).toBe(true)

          // the books: nothing dangling; the chain agrees with the ledger
          expect(yield* ledgerIntegrity).toEqual({ dangling: 0, projection_off: 0 })
          const reconciliation = yield* Reconciliation
          const report = yield* eventually(
            reconciliation.reconcileChain("TRC20"),
            (r) => r.skipped === 0 || r.differences.length > 0,
            20_000
          )
          expect(report.differences).toEqual([])
        })
    )
  })
})
