import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { Collections } from "./collections.js"
import { CustodyConfig } from "./custody-config.js"
import { CustodyStore } from "../src/stores/custody-store.js"
import { CustodyWallet } from "./wallet-actor.js"
import { WithdrawalDecisions } from "./withdrawal-decisions.js"
import { Withdrawals } from "./withdrawals.js"

/** The wallet actor's behaviour: drive the operation it is handed, from durable state. */
export const CustodyWalletLive = CustodyWallet.toLayer(
  Effect.map(Effect.all([Collections, Withdrawals, CustodyStore]), ([collections, withdrawals, store]) =>
    CustodyWallet.of({
      Drive: (envelope) =>
        store.operation(envelope.payload.operation_id).pipe(
          Effect.flatMap((found) =>
            Option.isSome(found) && found.value.type === "withdrawal"
              ? withdrawals.drive(envelope.payload.operation_id)
              : collections.drive(envelope.payload.operation_id)
          ),
          // a defect is logged and left to the resume loop: the operation stays open in the database
          Effect.catchAllDefect((defect) =>
            Effect.logError(`custody ${envelope.payload.operation_id}: the actor failed; resumed later`, defect)
          )
        )
    })
  ),
  { maxIdleTime: "5 minutes" }
).pipe(Layer.provide([Collections.Default, Withdrawals.Default, CustodyStore.Default]))

/**
 * Every two seconds: operations stored but never handed to their wallet's actor (an approval made by the
 * operator CLI or the console; a crash between storing and handing over) are handed over; and open
 * operations nobody touched for `resumeAfter` are handed over again (messages redelivered by the cluster
 * cover a crash mid-handler; this covers handlers that died).
 */
export const CustodyResumeLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const collections = yield* Collections
    const config = yield* CustodyConfig
    const once = (olderThanMs: number) =>
      collections.resume(olderThanMs).pipe(
        Effect.tap((n) =>
          n > 0 ? Effect.logInfo(`custody: handed ${n} open operation(s) to their wallets again`) : Effect.void
        ),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("custody: resuming open operations failed; trying again later", cause)
        )
      )
    yield* Effect.forkScoped(
      Effect.zipRight(
        once(Duration.toMillis(config.resumeAfter)),
        Effect.repeat(once(Duration.toMillis(config.resumeAfter)), Schedule.spaced("2 seconds"))
      )
    )
  })
).pipe(Layer.provide(Collections.Default))

/** Automatic collection, when FACET_AUTO_SWEEP_<CHAIN>_<CURRENCY> sets a threshold (off by default). */
export const AutoSweepLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const collections = yield* Collections
    const config = yield* CustodyConfig
    if (config.autoSweep.size === 0) return
    yield* Effect.logInfo(
      `automatic collection on: ${[...config.autoSweep].map(([asset, threshold]) => `${asset} from ${threshold}`).join(", ")}`
    )
    yield* Effect.forkScoped(
      Effect.repeat(
        collections.autoSweep().pipe(
          Effect.tap((n) => (n > 0 ? Effect.logInfo(`automatic collection: ${n} sweep(s) started`) : Effect.void)),
          Effect.catchAllCause((cause) => Effect.logWarning("automatic collection failed; trying again later", cause))
        ),
        Schedule.spaced(config.autoSweepInterval)
      )
    )
  })
).pipe(Layer.provide(Collections.Default))

/** PENDING withdrawals nobody decided in time are cancelled (funds unlocked), checked every minute. */
export const WithdrawalExpiryLive = Layer.scopedDiscard(
  Effect.flatMap(WithdrawalDecisions, (withdrawals) =>
    Effect.forkScoped(
      Effect.repeat(
        withdrawals.expire().pipe(
          Effect.tap((n) =>
            n > 0 ? Effect.logInfo(`${n} undecided withdrawal(s) expired and were cancelled`) : Effect.void
          ),
          Effect.catchAllCause((cause) => Effect.logWarning("withdrawal expiry failed; trying again later", cause))
        ),
        Schedule.spaced("1 minute")
      )
    )
  )
).pipe(Layer.provide(WithdrawalDecisions.Default))
