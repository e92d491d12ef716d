import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { Accounts, Ledger } from "../src/ledger/ledger.js"
import { LedgerStore } from "../src/stores/ledger-store.js"
import { Collections } from "./collections.js"

/**
 * Native coins are payable out (docs/reference/decisions.md: withdrawals leave from the main wallet and draw on
 * `available`): what reaches a merchant's main address from outside is a deposit there, moved from its
 * `uncollected` to `available` here — the coins are already where withdrawals leave from, so no transfer is
 * needed —; and TRX and BNB deposited to receive wallets, which the sweep endpoint refuses, are
 * consolidated into the main wallet by custody itself (`Collections.consolidateNatives`).
 */
export class MainDeposits extends Effect.Service<MainDeposits>()("facet/MainDeposits", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore

    /** Each main wallet's confirmed deposits become available, once: the balance row is locked while it moves. */
    const release = Effect.fn("MainDeposits.release")(function* () {
      const due = yield* ledgerStore.mainWalletsUncollected
      let moved = 0
      for (const row of due) {
        moved += yield* sql.withTransaction(
          Effect.gen(function* () {
            const held = yield* ledgerStore.lockHeld(row.account, row.chain, row.currency)
            if (Option.isNone(held) || held.value.units <= 0n) return 0
            const locked = held.value
            const units = locked.units
            yield* ledger.post([
              {
                debit: Accounts.uncollected(locked.merchant_id, locked.wallet_id),
                credit: Accounts.available(locked.merchant_id),
                chain: row.chain,
                currency: row.currency,
                amount: units,
                kind: "main_deposit",
                reference: locked.wallet_id
              }
            ])
            return 1
          })
        )
      }
      return moved
    })

    return { release } as const
  }),
  dependencies: [LedgerStore.Default, Ledger.Default]
}) {}

/** Every FACET_CONSOLIDATE_INTERVAL_MS (10 s; 0: off): main-address deposits made available, native coins consolidated. */
export const NativeConsolidationLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const main = yield* MainDeposits
    const collections = yield* Collections
    const interval = yield* Config.integer("FACET_CONSOLIDATE_INTERVAL_MS").pipe(Config.withDefault(10_000))
    if (interval <= 0) return
    const once = Effect.all([main.release(), collections.consolidateNatives()]).pipe(
      Effect.tap(([released, started]) =>
        released + started > 0
          ? Effect.logInfo(
              `native coins: ${released} main-address deposit balance(s) made available, ${started} consolidation(s) started`
            )
          : Effect.void
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("native consolidation failed; trying again later", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(once, Schedule.spaced(Duration.millis(interval))))
  })
).pipe(Layer.provide([MainDeposits.Default, Collections.Default]))
