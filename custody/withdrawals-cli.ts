import { Effect, Layer } from "effect"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { runCli } from "../src/operator/cli.js"
import { operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { WithdrawalDecisionsLive, withdrawalsCommand } from "./withdrawals-command.js"

/**
 * `npm run withdrawals` (its commands: withdrawals-command.ts) on the service's database: DATABASE_URL, or
 * the embedded PostgreSQL of the service running in FACET_DATA_DIR, read when a subcommand runs. Deciding
 * needs no chain: the service sends what is approved.
 */
const services = Layer.unwrapEffect(
  Effect.map(operatorConfig([]), (config) =>
    WithdrawalDecisionsLive.pipe(
      Layer.provide(LocalSignerLive.pipe(Layer.provide(OperatorMasterSeedLive))),
      Layer.provideMerge(operatorDatabaseLive(config))
    )
  )
)

runCli(withdrawalsCommand(services), "withdrawals")
