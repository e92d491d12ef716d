import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Layer } from "effect"
import type { ChainRpcError } from "../../src/chains/chain-client.js"
import type { OperationRow, OperationType } from "../../src/stores/custody-store.js"

/**
 * What a feature gives the operations engine for the operation kinds it owns: how one of them is driven
 * (what to sign, what to book, what to unlock — through `TransferSender` and `CustodyBooks`), and,
 * optionally, operations of its kinds that come due by themselves, stored before each resume pass.
 *
 * `drive` is run by the wallet's actor with the operation as stored, never a finished one, as often as it
 * is delivered: it must be safe to run again at any point. A node that does not answer (`ChainRpcError`)
 * and a database error (`SqlError`) are the engine's to handle: the operation stays open and is resumed.
 */
export interface OperationDriver {
  /** The operation types this driver drives; each type has exactly one driver. */
  readonly kinds: ReadonlyArray<OperationType>
  readonly drive: (operation: OperationRow) => Effect.Effect<void, ChainRpcError | SqlError>
  /** Stores the operations of its kinds now due (how many), before each resume pass hands open ones over. */
  readonly storeDue?: Effect.Effect<number>
}

/** The driver of each operation type: built once, in the composition root, from every feature's driver. */
export class OperationDrivers extends Context.Tag("facet/OperationDrivers")<
  OperationDrivers,
  {
    readonly of: (type: OperationType) => OperationDriver | undefined
    readonly all: ReadonlyArray<OperationDriver>
  }
>() {}

/** One driver per kind: two drivers claiming one kind is a wiring mistake, found at start-up. */
const registry = (drivers: ReadonlyArray<OperationDriver>) =>
  Effect.gen(function* () {
    const byType = new Map<OperationType, OperationDriver>()
    for (const driver of drivers) {
      for (const kind of driver.kinds) {
        if (byType.has(kind)) return yield* Effect.dieMessage(`two operation drivers claim ${kind}`)
        byType.set(kind, driver)
      }
    }
    return { of: (type: OperationType) => byType.get(type), all: drivers }
  })

/** The drivers the composition root registers (`Effect.all` of each feature's driver). */
export const makeOperationDriversLive = <E, R>(drivers: Effect.Effect<ReadonlyArray<OperationDriver>, E, R>) =>
  Layer.effect(OperationDrivers, Effect.flatMap(drivers, registry))
