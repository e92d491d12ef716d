import { NodeRuntime } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { OperatorError, operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { CustodyStore } from "./custody-store.js"

const USAGE = "usage: npm run custody -- list [--all] | show OPERATION_ID | retry OPERATION_ID"

/**
 * `npm run custody -- list|show|retry`: what the custody engine is doing, for operators. `list` prints one
 * JSON line per open operation (every recent one with --all) with what it waits for; `show` prints an
 * operation with every transaction it signed; `retry` hands an open operation to its wallet's actor again
 * at the running service's next resume pass (every 2 s). A FAILED operation moved nothing and is not
 * retried: request a new sweep.
 */
const main = Effect.gen(function* () {
  const [command, argument] = process.argv.slice(2)
  if (command !== "list" && command !== "show" && command !== "retry")
    return yield* new OperatorError({ message: USAGE })
  const config = yield* operatorConfig([])
  yield* Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* CustodyStore
    if (command === "list") {
      const rows = yield* sql<Record<string, unknown>>`
        SELECT id, type, status, chain, currency, trim_scale(amount)::text AS amount_base_units, wallet_id, from_address, to_address, withdrawal_id,
               waiting_for, failure_reason, halted_reason, halted_at, kicks, created_at, updated_at,
               round(extract(epoch FROM clock_timestamp() - created_at))::int AS age_seconds
        FROM custody_operations
        WHERE ${process.argv.includes("--all") ? sql`true` : sql`status NOT IN ('COMPLETED', 'FAILED')`}
        ORDER BY created_at DESC LIMIT 200`
      for (const row of rows) console.log(JSON.stringify(row))
      if (rows.length === 0) console.error(process.argv.includes("--all") ? "no operations" : "no operation in flight")
      return
    }
    if (argument === undefined) return yield* new OperatorError({ message: USAGE })
    const operation = yield* store.operation(argument)
    if (Option.isNone(operation)) return yield* new OperatorError({ message: `no custody operation ${argument}` })
    if (command === "show") {
      const attempts = yield* store.attempts(argument)
      console.log(
        JSON.stringify(
          {
            ...operation.value,
            amount: operation.value.amount.toString(),
            transactions: attempts.map((a) => ({
              attempt: a.attempt,
              tx_hash: a.tx_hash,
              status: a.status,
              amount: a.amount.toString(),
              nonce: a.nonce?.toString() ?? null,
              valid_until: a.valid_until?.toString() ?? null,
              max_fee: a.max_fee.toString(),
              fee: a.fee?.toString() ?? null,
              block_number: a.block_number?.toString() ?? null
            }))
          },
          null,
          2
        )
      )
      return
    }
    if (operation.value.status === "COMPLETED" || operation.value.status === "FAILED") {
      return yield* new OperatorError({
        message: `${argument} is ${operation.value.status}: nothing to retry${operation.value.status === "FAILED" ? " (it moved nothing; request a new sweep)" : ""}`
      })
    }
    // the running service's resume pass hands operations untouched for a while to their actors again
    yield* sql`UPDATE custody_operations SET updated_at = clock_timestamp() - interval '1 day' WHERE id = ${argument}`
    console.log(
      `${argument} will be handed to its wallet's actor again within seconds (it waits for: ${operation.value.waiting_for ?? "nothing recorded"})`
    )
  }).pipe(Effect.provide(CustodyStore.Default), Effect.provide(operatorDatabaseLive(config)))
}).pipe(
  Effect.catchTag("OperatorError", (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 2
    })
  )
)

NodeRuntime.runMain(main)
