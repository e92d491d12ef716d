import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Reconciliation } from "../indexer/reconciliation.js"
import { tronAddress } from "../src/keys/address-encoding.js"
import { MoneyDecimal } from "../src/money.js"
import { Wallets } from "../src/wallets/wallets.js"
import { clientOf, ledgerBalances, merchantWithFunds, untilWithdrawal } from "../test/custody-flows.js"
import { burnedBy, lentOnChain, reclaimOf, staked, SUN } from "../test/energy-flows.js"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { ledgerIntegrity } from "../test/ledger-integrity.js"
import { eventually } from "../test/webhook-receiver.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"

const post = (apiKey: string, path: string, json: unknown) =>
  Effect.flatMap(TestClient, (c) => c.request("POST", path, { apiKey, json }))

/** A TRON address nobody holds a key to: a recipient that never held USDT (the costlier transfer). */
const freshRecipient = () => tronAddress(crypto.getRandomValues(new Uint8Array(20)))

/** The TRX a quote says the platform pays for a TRC20 USDT withdrawal's network fee. */
const quotedNetworkFee = (apiKey: string, amount: string) =>
  Effect.map(post(apiKey, "/v1/withdrawal-fee-quote", { chain: "TRC20", currency: "USDT", amount }), (r) => {
    expect(r.status, r.text).toBe(200)
    return asRecord(r.body)
  })

/**
 * A USDT withdrawal created through the API, approved by a person, finished: the withdrawal, its custody
 * operation and what its transactions burned (the transfer's and its gas funding's, in sun).
 */
const withdraw = (apiKey: string, amount: string, to: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const created = yield* post(apiKey, "/v1/withdrawals", { chain: "TRC20", currency: "USDT", amount, to_address: to })
    expect(created.status, created.text).toBe(201)
    const id = String(asRecord(created.body).withdrawal_id)
    yield* (yield* WithdrawalDecisions).decide(id, "APPROVED", { kind: "operator", by: "owner@test", from: "test" })
    const done = yield* untilWithdrawal(apiKey, id, ["COMPLETED", "FAILED"])
    expect(done, JSON.stringify(done)).toMatchObject({ status: "COMPLETED" })
    const [operation] = yield* sql<{
      id: string
      energy_path: string | null
      energy_reason: string | null
      energy_id: string | null
    }>`SELECT id, energy_path, energy_reason, energy_id FROM custody_operations WHERE withdrawal_id = ${id}`
    const children = yield* sql<{ id: string; type: string; status: string; amount: string }>`
      SELECT id, type, status, amount::text AS amount FROM custody_operations WHERE parent_id = ${operation?.id ?? ""}
      ORDER BY created_at`
    const fundings = children.filter((c) => c.type === "gas_funding")
    const burned = yield* burnedBy(operation?.id ?? "", ...fundings.map((f) => f.id))
    return { withdrawal: done, operation, children, fundings, burned }
  })

describe("TRC20 withdrawals paid with energy lent from the platform's stake", () => {
  layer(TestAppLive({}, { chains: "devnet" }), { excludeTestServices: true, timeout: "300 seconds" })((it) => {
    it.effect(
      "staked: a 3 USDT withdrawal is quoted and burns at most 1 TRX, its energy lent and taken back; the first one activates the main wallet",
      () =>
        Effect.gen(function* () {
          // collected before anything is staked: the sweep and a quote burn TRX for the energy
          const { apiKey, merchantId } = yield* merchantWithFunds("TRC20", "USDT", "200")
          const unstaked = yield* quotedNetworkFee(apiKey, "3")
          expect(new MoneyDecimal(String(unstaked.network_fee)).greaterThan(5), String(unstaked.network_fee)).toBe(true)
          expect(yield* staked(50_000n)).toMatchObject({ status: "COMPLETED", merchant_id: null })
          const main = yield* (yield* Wallets).mainWallet(merchantId, "TRC20")
          const tron = yield* clientOf("TRC20")

          // tokens do not activate an account: the main wallet's first transfer pays its creation, once (1 TRX
          // and 0.1 TRX of bandwidth, the gas wallet's; quoted with the gas margin), its own bytes free of the day
          expect(yield* quotedNetworkFee(apiKey, "3")).toMatchObject({
            network_fee: "1.430000",
            net_amount: "2.997000"
          })
          const firstTo = freshRecipient()
          const first = yield* withdraw(apiKey, "3", firstTo)
          expect(first.operation).toMatchObject({ energy_path: "delegated" })
          expect(first.fundings).toMatchObject([{ status: "COMPLETED", amount: "1" }])
          expect(first.burned).toBe(1_100_000n)

          // the 3 USDT withdrawal, from a main wallet that exists: quoted and paid at well under 1 TRX
          const quote = yield* quotedNetworkFee(apiKey, "3")
          expect(new MoneyDecimal(String(quote.network_fee)).lessThan(1), String(quote.network_fee)).toBe(true)
          const to = freshRecipient()
          const second = yield* withdraw(apiKey, "3", to)
          expect(second.operation).toMatchObject({ energy_path: "delegated", energy_reason: null })
          const lending = second.children.find((c) => c.type === "energy_delegation")
          expect(lending).toMatchObject({ id: second.operation?.energy_id, status: "COMPLETED" })
          // its transfer and its gas funding: bandwidth only (the day's free bytes went to the first one)
          expect(second.burned).toBeGreaterThan(0n)
          expect(second.burned).toBeLessThanOrEqual(1n * SUN)
          expect(second.withdrawal).toMatchObject({ amount: "3.000000", net_amount: "2.997000" })
          expect(yield* tron.balance(to, "USDT")).toBe(2_997_000n)
          expect(yield* tron.balance(firstTo, "USDT")).toBe(2_997_000n)

          // taken back once the transfer is final: the chain lends nothing any more
          const reclaim = yield* reclaimOf(lending?.id ?? "")
          expect(reclaim).toMatchObject({ status: "COMPLETED" })
          // the staking wallet's lending and taking back burn bandwidth too (~0.27 TRX each, no staked
          // bandwidth): all told still a tenth of the ~13 TRX burned for a new holder's energy without a stake
          expect(second.burned + (yield* burnedBy(lending?.id ?? "", reclaim.id))).toBeLessThan(2n * SUN)
          expect(yield* lentOnChain(0n)).toBe(0n)
          expect(yield* ledgerBalances(merchantId, "TRC20", "USDT")).toEqual({
            uncollected: "0",
            available: "194",
            locked: "0"
          })
          expect(yield* tron.balance(main.address, "USDT")).toBe(194_006_000n)

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
