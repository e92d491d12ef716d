import { Effect, Layer } from "effect"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { SecretBoxLive } from "../src/keys/secret-box.js"
import { runCli } from "../src/operator/cli.js"
import { operatorConfig, operatorDatabaseLive } from "../src/operator/operator-database.js"
import { MerchantServicesLive, merchantsCommand } from "./merchants-command.js"

/**
 * `npm run merchants` (its commands: merchants-command.ts) on the service's database: DATABASE_URL, or the
 * embedded PostgreSQL of the service running in FACET_DATA_DIR, read when a subcommand runs; the service's
 * seed opens the console's secrets.
 */
const services = Layer.unwrapEffect(
  Effect.map(operatorConfig([]), (config) =>
    MerchantServicesLive.pipe(
      Layer.provide(SecretBoxLive.pipe(Layer.provide(OperatorMasterSeedLive))),
      Layer.provide(operatorDatabaseLive(config))
    )
  )
)

runCli(merchantsCommand(services), "merchants")
