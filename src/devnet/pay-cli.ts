import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Schema } from "effect"
import * as fs from "node:fs"
import { loadAppConfig } from "../config.js"
import { payFromCustomer, PayError, USAGE } from "./devnet-payments.js"
import { devnetFilePath, DevnetFile } from "./devnets.js"

const option = (args: ReadonlyArray<string>, name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}

/**
 * `npm run pay`: the merchant's offline test mode. Sends a real signed transfer from a funded devnet
 * customer account to any address, on the devnets that `npm start` runs with the same FACET_DATA_DIR,
 * and prints one JSON line with `tx_hash`.
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const asset = option(args, "--asset")?.toUpperCase()
  const to = option(args, "--to")
  const amount = option(args, "--amount")
  if (asset === undefined || to === undefined || amount === undefined) return yield* new PayError({ message: USAGE })
  const config = yield* loadAppConfig
  if (Either.isLeft(config)) return yield* new PayError({ message: `invalid configuration:\n${config.left}` })
  const file = devnetFilePath(config.right.dataDir)
  const text = yield* Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: () =>
      new PayError({
        message: `no running devnet found (${file}): start the service with \`npm start\` and the same FACET_DATA_DIR`
      })
  })
  const devnet = yield* Schema.decodeUnknown(Schema.parseJson(DevnetFile))(text).pipe(
    Effect.mapError(() => new PayError({ message: `${file} is not a devnet file` }))
  )
  const txHash = yield* payFromCustomer(devnet, asset, to, amount)
  console.log(JSON.stringify({ tx_hash: txHash, asset, to, amount }))
}).pipe(
  Effect.catchTag("PayError", (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 1
    })
  )
)

NodeRuntime.runMain(main, { disableErrorReporting: false })
