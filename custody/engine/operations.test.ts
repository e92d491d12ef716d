import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { ChainRpcError } from "../../src/chains/chain-client.js"
import { Wallets } from "../../src/wallets/wallets.js"
import { clientOf, merchantWithFunds, untilWithdrawal } from "../../test/custody-flows.js"
import { TestAppLive, TestClient } from "../../test/http-harness.js"
import { asRecord } from "../../test/json.js"
import { onboardMerchant } from "../../test/merchants.js"
import { WithdrawalDecisions } from "../withdrawal-decisions.js"
import { makeOperationDriversLive, type OperationDriver } from "./operation-driver.js"
import { driveOperation } from "./operations-engine.js"

// the resume pass once an hour: whatever reaches an actor here reached it by message
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CUSTODY_RESUME_INTERVAL_MS: "3600000" } })

const RECIPIENT = "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"

/** An open operation of `type` in the database, already counted as handed over (no resume pass takes it). */
const storedOperation = (type: string, status: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
    const main = yield* Effect.flatMap(Wallets, (wallets) => wallets.mainWallet(merchantId, "BEP20"))
    const id = `op_engine_${Math.random().toString(36).slice(2)}`
    yield* sql`
      INSERT INTO custody_operations (id, type, status, merchant_id, chain, currency, wallet_id, from_address,
                                      to_wallet_id, to_address, amount, waiting_for, kicks)
      VALUES (${id}, ${type}, ${status}, ${merchantId}, 'BEP20', 'USDT', ${main.id}, ${main.address},
              ${main.id}, ${main.address}, 1, 'test', 1)`
    return id
  })

const waitingFor = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ waiting_for: string | null }>`SELECT waiting_for FROM custody_operations WHERE id = ${id}`,
      (rows) => rows[0]?.waiting_for ?? null
    )
  )

/** A driver of `account_close` that records what it was given and answers as told. */
const fakeDriver = (driven: Ref.Ref<ReadonlyArray<string>>, fails: boolean): OperationDriver => ({
  kinds: ["account_close"],
  drive: (operation) =>
    Effect.zipRight(
      Ref.update(driven, (ids) => [...ids, operation.id]),
      fails ? Effect.fail(new ChainRpcError({ chain: operation.chain, message: "socket hang up" })) : Effect.void
    )
})

describe("the operations engine", () => {
  layer(ServiceLive, { excludeTestServices: true, timeout: "240 seconds" })((it) => {
    it.effect(
      "an operation is driven by the driver of its kind; a node that does not answer is what it waits for",
      () =>
        Effect.gen(function* () {
          const driven = yield* Ref.make<ReadonlyArray<string>>([])
          const open = yield* storedOperation("account_close", "SWEEPING")
          const finished = yield* storedOperation("account_close", "COMPLETED")
          const drivers = (fails: boolean) =>
            makeOperationDriversLive(Effect.all([Effect.succeed(fakeDriver(driven, fails))]))
          yield* driveOperation(open).pipe(Effect.provide(drivers(false)))
          // a finished operation is never driven again
          yield* driveOperation(finished).pipe(Effect.provide(drivers(false)))
          expect(yield* Ref.get(driven)).toEqual([open])
          yield* driveOperation(open).pipe(Effect.provide(drivers(true)))
          expect(yield* waitingFor(open)).toBe("the BEP20 node (socket hang up); resumed later")
        })
    )

    it.effect("two drivers claiming one kind are refused when the engine is built", () =>
      Effect.gen(function* () {
        const driven = yield* Ref.make<ReadonlyArray<string>>([])
        const twice = makeOperationDriversLive(
          Effect.all([Effect.succeed(fakeDriver(driven, false)), Effect.succeed(fakeDriver(driven, false))])
        )
        const built = yield* Effect.exit(Effect.scoped(Layer.build(twice)))
        expect(built._tag).toBe("Failure")
      })
    )

    it.effect(
      "an approved withdrawal reaches the main wallet's actor by message: COMPLETED with the resume pass an hour away",
      () =>
        Effect.gen(function* () {
          const decisions = yield* WithdrawalDecisions
          const client = yield* TestClient
          // the sweep that funds the merchant went to its receive wallet's actor by message too
          const { apiKey } = yield* merchantWithFunds("TRC20", "USDT", "200")
          const created = yield* client.request("POST", "/v1/withdrawals", {
            apiKey,
            json: { chain: "TRC20", currency: "USDT", amount: "50", to_address: RECIPIENT }
          })
          expect(created.status, created.text).toBe(201)
          const id = String(asRecord(created.body).withdrawal_id)
          yield* decisions.decide(id, "APPROVED", { kind: "operator", by: "owner@test", from: "test" })
          const done = yield* untilWithdrawal(apiKey, id, ["COMPLETED", "FAILED"])
          expect(done, JSON.stringify(done)).toMatchObject({ status: "COMPLETED" })
          const tron = yield* clientOf("TRC20")
          expect(yield* tron.balance(RECIPIENT, "USDT")).toBeGreaterThanOrEqual(49_950_000n)
        })
    )
  })
})
