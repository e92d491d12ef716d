import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import { cachedOutputPath, compileContract } from "./solidity-compiler.js"

const FORWARDER = "test/contracts/Forwarder.sol"

describe("Solidity compiler", () => {
  it.effect(
    "keeps solc's output by its input: a second compile reads it, a damaged copy is compiled again",
    () =>
      Effect.gen(function* () {
        const first = yield* compileContract(FORWARDER, "Forwarder")
        expect(first.bytecode).toMatch(/^0x[0-9a-f]{100,}$/)
        expect(first.abi.length).toBeGreaterThan(0)
        const cache = Option.getOrThrow(yield* cachedOutputPath(FORWARDER))
        expect(fs.existsSync(cache)).toBe(true)

        expect(yield* compileContract(FORWARDER, "Forwarder")).toEqual(first)

        // a truncated file (a disk filled up, a copy cut short) is not trusted: compiled again and replaced
        fs.writeFileSync(cache, fs.readFileSync(cache, "utf8").slice(0, 100))
        expect(yield* compileContract(FORWARDER, "Forwarder")).toEqual(first)
        expect(JSON.parse(fs.readFileSync(cache, "utf8"))).toHaveProperty("contracts")

        const missing = yield* Effect.flip(compileContract(FORWARDER, "NoSuchContract"))
        expect(missing.message).toContain("NoSuchContract")
      }),
    { timeout: 60_000 }
  )
})
