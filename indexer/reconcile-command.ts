import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { ALL_CHAINS, chainOption, operatorLive } from "./operator-runtime.js"
import { failed, unreachedAsFailure } from "../src/operator/cli.js"
import { operatorConfig } from "../src/operator/operator-database.js"
import { Reconciliation } from "./reconciliation.js"

/**
 * `npm run reconcile [-- --chain X]`: reconciles the chains once (indexer/reconciliation.ts) and prints
 * one JSON line per chain with its differences. Exits 1 when it finds a difference, so an operator's cron
 * can alert on it (docs/operating/cli.md).
 */
export const reconcileCommand = Command.make(
  "reconcile",
  {
    chain: chainOption.pipe(Options.optional, Options.withDescription("only this chain (default: every chain)"))
  },
  ({ chain }) =>
    Effect.gen(function* () {
      const chains = Option.match(chain, { onNone: () => ALL_CHAINS, onSome: (only) => [only] })
      const config = yield* operatorConfig(chains)
      const reports = yield* Effect.flatMap(Reconciliation, (r) => Effect.forEach(chains, r.reconcileChain)).pipe(
        Effect.provide(Reconciliation.Default),
        Effect.provide(operatorLive(config))
      )
      for (const report of reports) {
        console.log(
          JSON.stringify({
            chain: report.chain,
            height: report.height?.toString() ?? null,
            checked: report.checked,
            skipped: report.skipped,
            differences: report.differences
          })
        )
      }
      const differing = reports.filter((r) => r.differences.length > 0).map((r) => r.chain)
      if (differing.length > 0) return yield* failed(`differences on ${differing.join(", ")}`)
    }).pipe(unreachedAsFailure)
).pipe(
  Command.withDescription(
    "chain balances against the ledger, once: one JSON line per chain; exit 1 when there is a difference"
  )
)
