import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { CustodyStore } from "../../src/stores/custody-store.js"
import { CustodyConfig } from "../custody-config.js"
import { isFinished } from "../custody-operation.js"
import { OperationDrivers } from "./operation-driver.js"
import { Operations } from "./operations.js"
import { CustodyWallet } from "./wallet-actor.js"

/**
 * The operations engine: it knows the shape of an operation's life (stored, handed to its wallet's actor,
 * driven until COMPLETED or FAILED, resumed when nobody drives it) and nothing of any feature — what an
 * operation of a kind signs, books and unlocks is its driver's (operation-driver.ts), registered in the
 * composition root.
 */

/**
 * What a wallet's actor runs for an operation, from durable state, as often as it is delivered: the
 * operation's driver, unless it is finished. A node that does not answer is recorded as what the operation
 * waits for, a database error logged: either way it stays open and is resumed later.
 */
export const driveOperation = Effect.fn("Operations.drive")(function* (operationId: string) {
  const store = yield* CustodyStore
  const drivers = yield* OperationDrivers
  const found = yield* store.operation(operationId)
  if (Option.isNone(found) || isFinished(found.value.status)) return
  const operation = found.value
  const driver = drivers.of(operation.type)
  if (driver === undefined)
    return yield* Effect.dieMessage(`custody ${operation.id}: no driver for ${operation.type} operations`)
  yield* driver.drive(operation).pipe(
    Effect.catchTag("ChainRpcError", (e) =>
      store.waitingFor(operation.id, `the ${operation.chain} node (${e.message}); resumed later`)
    ),
    Effect.catchTag("SqlError", (e) =>
      Effect.logError(`custody ${operation.id}: database error, resumed later: ${e.message}`)
    )
  )
})

/** The wallet actor's behaviour: drive the operation it is handed. */
export const CustodyWalletLive = CustodyWallet.toLayer(
  Effect.map(Effect.context<CustodyStore | OperationDrivers>(), (context) =>
    CustodyWallet.of({
      Drive: (envelope) =>
        driveOperation(envelope.payload.operation_id).pipe(
          Effect.provide(context),
          // a defect is logged and left to the resume pass: the operation stays open in the database
          Effect.catchAllDefect((defect) =>
            Effect.logError(`custody ${envelope.payload.operation_id}: the actor failed; resumed later`, defect)
          )
        )
    })
  ),
  { maxIdleTime: "5 minutes" }
).pipe(Layer.provide(CustodyStore.Default))

/**
 * One resume pass: the drivers store what came due by itself (energy lent for a transfer now over is taken
 * back), then operations never handed to their actor (stored by a process that runs no actors, or a crash
 * between storing and handing over) are handed over, and open operations nobody touched for `olderThanMs`
 * are handed over again (a redelivered message covers a crash mid-handler; this covers handlers that died).
 */
const resumeOnce = Effect.fn("Operations.resume")(function* (olderThanMs: number) {
  const store = yield* CustodyStore
  const operations = yield* Operations
  const drivers = yield* OperationDrivers
  for (const driver of drivers.all) {
    if (driver.storeDue === undefined) continue
    yield* driver.storeDue.pipe(
      Effect.catchAllCause((cause) =>
        Effect.logWarning(`custody: storing the due ${driver.kinds.join(", ")} operations failed; tried again`, cause)
      )
    )
  }
  const due = yield* store.open(olderThanMs)
  for (const operation of due) yield* operations.handOver(operation.id, operation.wallet_id)
  return due.length
})

/**
 * The resume pass, a safety net: every FACET_CUSTODY_RESUME_INTERVAL_MS (2 s). Operations stored in this
 * process are handed over by message when they are stored; what the pass still finds is what an operator
 * command approved or requested, or what a crash or a dead handler left.
 */
export const CustodyResumeLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* CustodyConfig
    const every = yield* Config.integer("FACET_CUSTODY_RESUME_INTERVAL_MS").pipe(Config.withDefault(2000))
    const once = resumeOnce(Duration.toMillis(config.resumeAfter)).pipe(
      Effect.tap((n) =>
        n > 0 ? Effect.logInfo(`custody: handed ${n} open operation(s) to their wallets again`) : Effect.void
      ),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("custody: resuming open operations failed; trying again later", cause)
      )
    )
    yield* Effect.forkScoped(Effect.zipRight(once, Effect.repeat(once, Schedule.spaced(Duration.millis(every)))))
  })
).pipe(Layer.provide([Operations.Default, CustodyStore.Default]))
