import { Effect, Layer } from "effect"
import { operatorLive } from "../indexer/operator-runtime.js"
import { runCli } from "../src/operator/cli.js"
import { operatorConfig } from "../src/operator/operator-database.js"
import { WithdrawalDecisionsLive, withdrawalsCommand } from "./withdrawals-command.js"

/**
 * `npm run withdrawals` (its commands: withdrawals-command.ts) on the service's database: DATABASE_URL, or
 * the embedded PostgreSQL of the service running in FACET_DATA_DIR, read when a subcommand runs.
 */
const services = Layer.unwrapEffect(
  Effect.map(operatorConfig([]), (config) => WithdrawalDecisionsLive.pipe(Layer.provideMerge(operatorLive(config))))
)

runCli(withdrawalsCommand(services), "withdrawals")
