import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as readline from "node:readline/promises"
import { AppConfig, loadAppConfig } from "../config.js"
import { DatabaseLive } from "../database/database.js"
import { runMigrations } from "../database/migrator.js"
import { isAlive } from "../processes/child-process.js"
import { resetDevnets } from "./devnet-reset.js"
import { devnetFilePath, DevnetFile, devnetStatePaths } from "./devnets.js"

class ResetAborted extends Schema.TaggedError<ResetAborted>()("ResetAborted", { message: Schema.String }) {}

const WARNING = (dataDir: string) =>
  `This deletes the devnet chains kept in ${devnetStatePaths(dataDir).dir} and, in the database, every transaction, ` +
  "ledger transfer, balance, chain webhook event and indexer cursor of them; orders go back to unpaid. " +
  "Merchants, API keys, wallets, deposit addresses and orders stay."

/** Asks on the terminal; without one, only `--yes` may go ahead. */
const confirm = (dataDir: string, yes: boolean) =>
  Effect.gen(function* () {
    if (yes) return
    if (!process.stdin.isTTY)
      return yield* new ResetAborted({
        message: `${WARNING(dataDir)}\nNot on a terminal: run it again with --yes to go ahead.`
      })
    const answer = yield* Effect.promise(async () => {
      const rl = readline.createInterface({ input: process.stdin, output: process.stdout })
      try {
        return await rl.question(`${WARNING(dataDir)}\nType "reset" to go ahead: `)
      } finally {
        rl.close()
      }
    })
    if (answer.trim() !== "reset") return yield* new ResetAborted({ message: "nothing was changed" })
  })

/**
 * `npm run devnet:reset [-- --yes]`: a clean slate for the devnets (see resetDevnets), for a user who
 * wants one. Refused on mainnet and while a service runs on the same FACET_DATA_DIR.
 */
const main = Effect.gen(function* () {
  const loaded = yield* loadAppConfig
  if (Either.isLeft(loaded)) return yield* new ResetAborted({ message: `invalid configuration:\n${loaded.left}` })
  const config = loaded.right
  if (config.network !== "devnet")
    return yield* new ResetAborted({ message: "FACET_NETWORK is not devnet: there is no devnet to reset" })
  const endpoints = devnetFilePath(config.dataDir)
  const running = fs.existsSync(endpoints)
    ? Schema.decodeUnknownOption(Schema.parseJson(DevnetFile))(fs.readFileSync(endpoints, "utf8"))
    : undefined
  if (running?._tag === "Some" && isAlive(running.value.pid)) {
    return yield* new ResetAborted({
      message: `the service (pid ${running.value.pid}) is running on ${config.dataDir}: stop it first`
    })
  }
  yield* confirm(config.dataDir, process.argv.slice(2).includes("--yes"))
  const counts = yield* Effect.zipRight(runMigrations(), resetDevnets(config.dataDir)).pipe(
    Effect.provide(DatabaseLive.pipe(Layer.provide(Layer.succeed(AppConfig, config))))
  )
  console.log(
    `devnets reset: ${counts.transactions} transactions, ${counts.ledgerTransfers} ledger transfers, ${counts.webhookEvents} webhook events removed; ` +
      `${counts.ordersUnpaid} orders back to unpaid; ${counts.chains} chains forgotten. The next \`npm start\` makes new devnets.`
  )
}).pipe(
  Effect.catchTags({
    ResetAborted: (error) =>
      Effect.sync(() => {
        console.error(error.message)
        process.exitCode = 1
      }),
    DevnetResetRefused: (error) =>
      Effect.sync(() => {
        console.error(error.message)
        process.exitCode = 1
      })
  })
)

NodeRuntime.runMain(main)
