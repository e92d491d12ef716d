import "../test/fast-devnets.js"

// the devnet gas wallet's 100,000 TRX are under this: on TRX alone TRON's gas is low
process.env.FACET_GAS_LOW_TRC20 = "1000000"

import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { staked } from "../test/energy-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { eventually } from "../test/webhook-receiver.js"

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

describe("TRON's gas status counts the stake's energy", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect(
      "low TRX: low without a stake, ok once the stake can lend a transfer's energy (portfolio, health, metrics)",
      () =>
        Effect.gen(function* () {
          const client = yield* TestClient
          const { apiKey } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
          expect(yield* tronNetwork(apiKey)).toMatchObject({
            gas_asset: "TRX",
            gas_balance: "100000",
            gas_status: "low"
          })

          expect(yield* staked(50_000n)).toMatchObject({ status: "COMPLETED" })
          // the gas wallet is read again once its reading is 5 s old
          const network = yield* eventually(tronNetwork(apiKey), (n) => n.gas_status === "ok", 15_000)
          // 50,000 TRX staked (its bytes free of the day): TRX alone would still say low
          expect(network).toMatchObject({ gas_balance: "50000", gas_status: "ok" })

          // operators see the same, and why: the stake lends two transfers' energy (17,876 TRX each)
          const health = asRecord((yield* client.request("GET", "/health")).body)
          const tron = records(asRecord(health.custody).gas_wallets).find((g) => g.chain === "TRC20")
          expect(tron).toMatchObject({
            gas_status: "ok",
            energy: { lendable: "50000", per_transfer: "17876", transfers: 2 }
          })
          const metrics = (yield* client.request("GET", "/metrics")).text
          expect(metrics).toContain(`facet_gas_wallet_status{chain="TRC20",status="ok"} 1`)
          expect(metrics).toContain(`facet_gas_wallet_energy_transfers{chain="TRC20"} 2`)
        })
    )
  })
})
