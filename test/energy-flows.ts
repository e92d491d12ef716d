import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { EnergySource } from "../custody/energy.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { eventually } from "./webhook-receiver.js"

/** TRON energy lent from the platform's stake, for the custody tests on the devnet. */

export const SUN = 1_000_000n

/** A custody operation once it is COMPLETED or FAILED (the running service's resume pass drives it). */
export const operationFinished = (id: string) =>
  Effect.flatMap(CustodyStore, (store) =>
    Effect.map(
      eventually(
        store.operation(id),
        (found) => Option.isSome(found) && (found.value.status === "COMPLETED" || found.value.status === "FAILED"),
        60_000
      ),
      Option.getOrThrow
    )
  )

/** The operator stakes `trx` TRX of the staking wallet and the service runs it: the stake operation, finished. */
export const staked = (trx: bigint) =>
  Effect.flatMap(EnergySource, (energy) =>
    Effect.flatMap(energy.requestStake("energy_stake", trx * SUN), operationFinished)
  )

/** The sun of stake the staking wallet has lent, as the chain says, once it is `expected`. */
export const lentOnChain = (expected: bigint) =>
  Effect.flatMap(EnergySource, (energy) =>
    Effect.map(
      eventually(energy.status(), (s) => s.lentOnChain === expected, 60_000),
      (s) => s.lentOnChain
    )
  )

/** What custody's final transactions of these operations burned on chain, in sun. */
export const burnedBy = (...operationIds: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ fee: string }>`
        SELECT coalesce(sum(fee), 0)::text AS fee FROM custody_transactions
        WHERE operation_id IN ${sql.in(operationIds)} AND status = 'final'`,
      (rows) => BigInt(rows[0]?.fee ?? "0")
    )
  )

/** The taking back of a lending, once the resume pass stored it and it finished. */
export const reclaimOf = (lendingId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [reclaim] = yield* eventually(
      sql<{ id: string }>`
        SELECT id FROM custody_operations WHERE type = 'energy_reclaim' AND parent_id = ${lendingId}`,
      (rows) => rows.length === 1,
      20_000
    )
    return yield* operationFinished(reclaim?.id ?? "")
  })
