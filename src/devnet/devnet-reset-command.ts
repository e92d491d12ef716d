import { Command, Options } from "@effect/cli"
import { Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as readline from "node:readline/promises"
import { AppConfig, loadAppConfig } from "../config.js"
import { StoresLive } from "../stores/stores-layer.js"
import { DatabaseLive } from "../database/database.js"
import { runMigrations } from "../database/migrator.js"
import { failed } from "../operator/cli.js"
import { isAlive } from "../processes/child-process.js"
import { resetDevnets } from "./devnet-reset.js"
import { devnetFilePath, DevnetFile, devnetStatePaths } from "./devnets.js"

const WARNING = (dataDir: string) =>
  `This deletes the devnet chains kept in ${devnetStatePaths(dataDir).dir} and, in the database, every transaction, ` +
  "ledger transfer, balance, chain webhook event and indexer cursor of them; orders go back to unpaid. " +
  "Merchants, API keys, wallets, deposit addresses and orders stay."

/** Asks on the terminal; without one, only `--yes` may go ahead. Not going ahead is exit 1. */
const confirm = (dataDir: string, yes: boolean) =>
  Effect.gen(function* () {
    if (yes) return
    if (!process.stdin.isTTY)
      return yield* failed(`${WARNING(dataDir)}\nNot on a terminal: run it again with --yes to go ahead.`)
    const answer = yield* Effect.promise(async () => {
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout })
      try {
        return await rl.question(`${WARNING(dataDir)}\nType "reset" to go ahead: `)
      } finally {
        rl.close()
      }
    })
    if (answer.trim() !== "reset") return yield* failed("nothing was changed")
  })

/**
 * `npm run devnet:reset [-- --yes]`: a clean slate for the devnets (see resetDevnets), for a user who
 * wants one. Refused on mainnet and while a service runs on the same FACET_DATA_DIR (exit 1,
 * docs/operating/cli.md).
 */
export const devnetResetCommand = Command.make(
  "devnet:reset",
  {
    yes: Options.boolean("yes").pipe(Options.withDescription("go ahead without asking (needed off a terminal)"))
  },
  ({ yes }) =>
    Effect.gen(function* () {
      const loaded = yield* loadAppConfig
      if (Either.isLeft(loaded)) return yield* failed(`invalid configuration:\n${loaded.left}`)
      const config = loaded.right
      if (config.network !== "devnet") return yield* failed("FACET_NETWORK is not devnet: there is no devnet to reset")
      const endpoints = devnetFilePath(config.dataDir)
      const running = fs.existsSync(endpoints)
        ? Schema.decodeUnknownOption(Schema.parseJson(DevnetFile))(fs.readFileSync(endpoints, "utf8"))
        : undefined
      if (running?._tag === "Some" && isAlive(running.value.pid)) {
        return yield* failed(`the service (pid ${running.value.pid}) is running on ${config.dataDir}: stop it first`)
      }
      yield* confirm(config.dataDir, yes)
      const counts = yield* Effect.zipRight(runMigrations(), resetDevnets(config.dataDir)).pipe(
        Effect.provide(
          StoresLive.pipe(Layer.provideMerge(DatabaseLive), Layer.provide(Layer.succeed(AppConfig, config)))
        )
      )
      console.log(
        `devnets reset: ${counts.transactions} transactions, ${counts.ledgerTransfers} ledger transfers, ${counts.webhookEvents} webhook events removed; ` +
          `${counts.ordersUnpaid} orders back to unpaid; ${counts.chains} chains forgotten. The next \`npm start\` makes new devnets.`
      )
    }).pipe(Effect.catchTag("DevnetResetRefused", (error) => failed(error.message)))
).pipe(
  Command.withDescription(
    "devnet only, the service stopped: a clean slate for the devnets (chains and their money rows go; merchants, keys, addresses and orders stay)"
  )
)
