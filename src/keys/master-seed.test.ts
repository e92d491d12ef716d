import { mnemonicToSeedSync } from "@scure/bip39"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "../../test/temp-dir.js"
import { makeAppConfigLive } from "../config.js"
import { MasterSeed, MasterSeedLive, OperatorMasterSeedLive } from "./master-seed.js"

const MNEMONIC = "test test test test test test test test test test test junk"

const load = (overrides: Parameters<typeof makeAppConfigLive>[0], seed = MasterSeedLive) =>
  Effect.flatMap(MasterSeed, (m) => Effect.succeed(Redacted.value(m.seed))).pipe(
    Effect.provide(seed.pipe(Layer.provide(makeAppConfigLive(overrides))))
  )

describe("master seed", () => {
  it.effect("comes from FACET_MASTER_SEED or a file, never both", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const expected = Buffer.from(mnemonicToSeedSync(MNEMONIC)).toString("hex")
        const fromEnv = yield* load({
          masterSeed: Option.some(Redacted.make(`  ${MNEMONIC}\n`)),
          masterSeedFile: Option.none()
        })
        expect(Buffer.from(fromEnv).toString("hex")).toBe(expected)
        const file = path.join(yield* tempDir("facet-seed-"), "seed.txt")
        fs.writeFileSync(file, MNEMONIC)
        const fromFile = yield* load({ masterSeed: Option.none(), masterSeedFile: Option.some(file) })
        expect(Buffer.from(fromFile).toString("hex")).toBe(expected)
        const both = yield* Effect.flip(
          load({ masterSeed: Option.some(Redacted.make(MNEMONIC)), masterSeedFile: Option.some(file) })
        )
        expect(both.message).toMatch(/not both/)
        const invalid = yield* Effect.flip(
          load({ masterSeed: Option.some(Redacted.make("test test test")), masterSeedFile: Option.none() })
        )
        expect(invalid.message).toMatch(/not a valid BIP-39/)
        expect(invalid.message).not.toContain("test test")
      })
    )
  )

  it.effect("generates a development seed once, 0600, on devnet only", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* tempDir("facet-seed-dev-")
        const options = {
          masterSeed: Option.none(),
          masterSeedFile: Option.none(),
          dataDir,
          network: "devnet" as const
        }
        const first = yield* load(options)
        const file = path.join(dataDir, "master-seed.dev.txt")
        expect(fs.statSync(file).mode & 0o777).toBe(0o600)
        const second = yield* load(options)
        expect(Buffer.from(second).equals(Buffer.from(first))).toBe(true)
        const mainnet = yield* Effect.flip(
          load({ ...options, dataDir: yield* tempDir("facet-seed-main-"), network: "mainnet" })
        )
        expect(mainnet.message).toMatch(/FACET_MASTER_SEED/)
      })
    )
  )

  it.effect("an operator command reads the service's development seed and never writes one", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dataDir = yield* tempDir("facet-seed-operator-")
        const options = {
          masterSeed: Option.none(),
          masterSeedFile: Option.none(),
          dataDir,
          network: "devnet" as const
        }
        // another data directory than the service's: a seed written here would derive other addresses
        const missing = yield* Effect.flip(load(options, OperatorMasterSeedLive))
        expect(missing.message).toMatch(/no development master seed/)
        expect(fs.existsSync(path.join(dataDir, "master-seed.dev.txt"))).toBe(false)
        // the service warns of the development seed at every start; a command beside it reads it quietly
        const warned: Array<string> = []
        const capture = Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ message }) => warned.push(String(message)))
        )
        const service = yield* load(options).pipe(Effect.provide(capture))
        expect(warned).toEqual([expect.stringContaining("DEVELOPMENT MASTER SEED")])
        const operator = yield* load(options, OperatorMasterSeedLive).pipe(Effect.provide(capture))
        expect(warned).toHaveLength(1)
        expect(Buffer.from(operator).equals(Buffer.from(service))).toBe(true)
      })
    )
  )
})
