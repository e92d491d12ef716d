import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { ALL_CHAINS, chainArgument, operatorLive } from "./operator-runtime.js"
import { OperatorError, operatorConfig } from "../src/operator/operator-database.js"
import { Reconciliation } from "./reconciliation.js"

/**
 * `npm run reconcile [-- --chain X]`: reconciles the chains once (indexer/reconciliation.ts) and prints
 * one JSON line per chain with its differences. Exits 1 when it finds a difference, so an operator's cron
 * can alert on it.
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const only = chainArgument(args)
  if (args.includes("--chain") && only === undefined)
    return yield* new OperatorError({ message: "usage: npm run reconcile [-- --chain TRC20|BEP20|SOLANA]" })
  const chains = only === undefined ? ALL_CHAINS : [only]
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
  if (reports.some((r) => r.differences.length > 0)) process.exitCode = 1
}).pipe(
  Effect.catchTag("OperatorError", (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 2
    })
  )
)

NodeRuntime.runMain(main)
