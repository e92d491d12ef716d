import { Command, Options } from "@effect/cli"
import { Effect, Either, Option, Schema } from "effect"
import * as fs from "node:fs"
import { loadAppConfig } from "../config.js"
import { addressFormatProblem } from "../keys/address-encoding.js"
import { failed, parsedOption, refused } from "../operator/cli.js"
import { DECIMALS, payFromCustomer, PayError } from "./devnet-payments.js"
import { devnetFilePath, DevnetFile } from "./devnets.js"

/** The chain of an asset key (`TRC20-USDT` → TRC20). */
const chainOf = (asset: string) =>
  asset.startsWith("TRC20-") ? "TRC20" : asset.startsWith("BEP20-") ? "BEP20" : "SOLANA"

/**
 * `npm run pay`: the merchant's offline test mode. Sends a real signed transfer from a funded devnet
 * customer account to any address, on the devnets that `npm start` runs with the same FACET_DATA_DIR,
 * and prints one JSON line with `tx_hash`. An address that is not one of the asset's chain is exit 2; a
 * payment that fails (no devnet, the chain refusing it) is exit 1 (docs/operating/cli.md).
 */
export const payCommand = Command.make(
  "pay",
  {
    asset: parsedOption("asset", "ASSET", `one of ${Object.keys(DECIMALS).join(", ")}`, (value) =>
      Option.liftPredicate(value.toUpperCase(), (asset) => asset in DECIMALS)
    ).pipe(Options.withDescription("what to pay, e.g. TRC20-USDT")),
    to: Options.text("to").pipe(Options.withPseudoName("ADDRESS"), Options.withDescription("the address paid")),
    amount: parsedOption("amount", "AMOUNT", "an amount such as 12.5", (value) =>
      Option.liftPredicate(value, (amount) => /^\d+(\.\d+)?$/.test(amount))
    ).pipe(Options.withDescription("in the asset's units, e.g. 12.5"))
  },
  ({ asset, to, amount }) =>
    Effect.gen(function* () {
      const problem = addressFormatProblem(chainOf(asset), to)
      if (problem !== undefined) return yield* refused(`--to ${problem}`)
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
    }).pipe(Effect.catchTag("PayError", (error) => failed(error.message)))
).pipe(
  Command.withDescription(
    "devnet only: a real signed payment from a funded devnet customer to any address, on the devnets `npm start` runs"
  )
)
