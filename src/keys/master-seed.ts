import { generateMnemonic, mnemonicToSeedSync, validateMnemonic } from "@scure/bip39"
import { wordlist } from "@scure/bip39/wordlists/english.js"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { AppConfig } from "../config.js"

export class MasterSeedError extends Schema.TaggedError<MasterSeedError>()("MasterSeedError", {
  message: Schema.String
}) {}

/**
 * The HD master secret every address derives from. It comes from the operator (FACET_MASTER_SEED or
 * FACET_MASTER_SEED_FILE), is never written to the database and never logged; only the signer uses it.
 */
export class MasterSeed extends Context.Tag("facet/MasterSeed")<
  MasterSeed,
  {
    readonly seed: Redacted.Redacted<Uint8Array>
  }
>() {}

const DEV_SEED_FILE = "master-seed.dev.txt"

const fromMnemonic = (mnemonic: string, source: string) => {
  const words = mnemonic.trim().split(/\s+/).join(" ")
  return validateMnemonic(words, wordlist)
    ? Effect.succeed({ seed: Redacted.make(mnemonicToSeedSync(words)) })
    : Effect.fail(
        new MasterSeedError({
          message: `${source} is not a valid BIP-39 English mnemonic (12 to 24 words with a valid checksum)`
        })
      )
}

const readFile = (file: string) =>
  Effect.try({
    try: () => fs.readFileSync(file, "utf8"),
    catch: () => new MasterSeedError({ message: `cannot read the master seed file ${file}` })
  })

/**
 * The master seed from the configuration. On the devnet without one, the service writes a development seed
 * into its data directory on first start (`create`); an operator command only reads the one there, since a
 * seed it wrote would derive other addresses and seal with another key than the service it works beside.
 */
export const makeMasterSeedLive = (options: { readonly create: boolean }) =>
  Layer.effect(
    MasterSeed,
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (Option.isSome(config.masterSeed) && Option.isSome(config.masterSeedFile)) {
        return yield* new MasterSeedError({ message: "set FACET_MASTER_SEED or FACET_MASTER_SEED_FILE, not both" })
      }
      if (Option.isSome(config.masterSeed))
        return yield* fromMnemonic(Redacted.value(config.masterSeed.value), "FACET_MASTER_SEED")
      if (Option.isSome(config.masterSeedFile)) {
        return yield* fromMnemonic(yield* readFile(config.masterSeedFile.value), `the file in FACET_MASTER_SEED_FILE`)
      }
      if (config.network === "mainnet") {
        return yield* new MasterSeedError({
          message:
            "FACET_NETWORK=mainnet needs the operator's master secret: set FACET_MASTER_SEED or FACET_MASTER_SEED_FILE"
        })
      }
      const file = path.join(config.dataDir, DEV_SEED_FILE)
      if (!fs.existsSync(file) && !options.create) {
        return yield* new MasterSeedError({
          message: `no development master seed in ${config.dataDir}: run this with the FACET_DATA_DIR of the service (or its FACET_MASTER_SEED)`
        })
      }
      if (!fs.existsSync(file)) {
        yield* Effect.try({
          try: () => {
            fs.mkdirSync(config.dataDir, { recursive: true })
            fs.writeFileSync(file, `${generateMnemonic(wordlist, 256)}\n`, { mode: 0o600, flag: "wx" })
          },
          catch: () => new MasterSeedError({ message: `cannot write a development master seed to ${file}` })
        })
      }
      // the service says it loudly at every start; a command working beside it need not repeat it each call
      if (options.create)
        yield* Effect.logWarning(
          `!!! DEVELOPMENT MASTER SEED in ${file}: every address derives from it. It is for development only — ` +
            "never send real funds to these addresses; set FACET_MASTER_SEED or FACET_MASTER_SEED_FILE in production. !!!"
        )
      return yield* fromMnemonic(yield* readFile(file), file)
    })
  )

/** The service's: writes the devnet's development seed on first start. */
export const MasterSeedLive = makeMasterSeedLive({ create: true })

/** An operator command's: reads the service's seed, never writes one. */
export const OperatorMasterSeedLive = makeMasterSeedLive({ create: false })

/** For tests and tools: a fixed mnemonic. */
export const masterSeedFromMnemonic = (mnemonic: string) => Layer.effect(MasterSeed, fromMnemonic(mnemonic, "mnemonic"))
