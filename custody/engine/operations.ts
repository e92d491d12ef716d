import { Effect, Option } from "effect"
import { CustodyStore } from "../../src/stores/custody-store.js"
import { WalletActors } from "./wallet-actor.js"

/** A stored operation and the wallet whose actor runs it. */
export interface HandOff {
  readonly operationId: string
  readonly walletId: string
}

/**
 * Handing operations to wallet actors: the engine's public side, what features call once they stored an
 * operation (a sweep requested, a withdrawal approved, a gas funding to wait for). Each hand-over is a new
 * message, counted in the operation's `kicks`; the actor drives it with its kind's driver.
 */
export class Operations extends Effect.Service<Operations>()("facet/Operations", {
  effect: Effect.gen(function* () {
    const store = yield* CustodyStore
    const actors = yield* WalletActors

    /** Persists the message and returns: the wallet's actor drives the operation (a crash redelivers it). */
    const handOver = Effect.fn("Operations.handOver")(function* (operationId: string, walletId: string) {
      const kicks = yield* store.kick(operationId)
      yield* actors.kick(
        walletId,
        operationId,
        Option.getOrElse(kicks, () => 1)
      )
    })

    /** Several, one message each (a batch's items, in the order given). */
    const handOverAll = (operations: ReadonlyArray<HandOff>) =>
      Effect.forEach(operations, (o) => handOver(o.operationId, o.walletId), { discard: true })

    /**
     * Hands the operation over and waits until its actor has run it once (a gas funding waited for by the
     * wallet it funds). `first`: the first hand-over of one stored already counted — the same message each
     * time it is asked for, so a waiter run again gets the first run's reply instead of a second run;
     * `again`: a new message, counted.
     */
    const handOverAndWait = Effect.fn("Operations.handOverAndWait")(function* (
      operationId: string,
      walletId: string,
      which: "first" | "again"
    ) {
      const kick = which === "first" ? 0 : Option.getOrElse(yield* store.kick(operationId), () => 0)
      yield* actors.run(walletId, operationId, kick)
    })

    return { handOver, handOverAll, handOverAndWait } as const
  }),
  dependencies: [CustodyStore.Default, WalletActors.Default]
}) {}
