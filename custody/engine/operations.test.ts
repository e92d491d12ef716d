import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Ref } from "effect"
import { ChainRpcError } from "../../src/chains/chain-client.js"
import { Wallets } from "../../src/wallets/wallets.js"
import { TestAppLive } from "../../test/http-harness.js"
import { onboardMerchant } from "../../test/merchants.js"
import { makeOperationDriversLive, type OperationDriver } from "./operation-driver.js"
import { driveOperation } from "./operations-engine.js"

// the resume pass once an hour: it takes none of this file's operations
const ServiceLive = TestAppLive({}, { chains: "devnet", env: { FACET_CUSTODY_RESUME_INTERVAL_MS: "3600000" } })

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
  })
})
