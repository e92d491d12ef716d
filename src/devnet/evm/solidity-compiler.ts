import { Effect, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import type { Abi, Hex } from "viem"
import { DevnetError } from "../devnet-error.js"

/**
 * solc from npm is 8 MB of compiled-to-JavaScript compiler (0.4 s to load, 0.3–1 s a compile): loaded
 * only when a contract is compiled, not by every process that imports the devnet.
 */
const loadSolc = Effect.tryPromise({
  try: () => import("solc").then((module) => module.default),
  catch: (cause) => new DevnetError({ message: "cannot load solc (npm solc)", cause })
})

const require = createRequire(import.meta.url)
const PackageVersion = Schema.parseJson(Schema.Struct({ version: Schema.String }))

/**
 * Compiler output by the hash of the compiler's version and its whole input, as build tools keep theirs:
 * in node_modules/.cache (the project's own, not a shared temporary directory), so each fresh devnet (every
 * test that starts one, a first `npm start`) does not compile the same source again.
 */
const cacheFile = (input: string) =>
  Effect.try(() => {
    const solcPackage = require.resolve("solc/package.json")
    const { version } = Schema.decodeUnknownSync(PackageVersion)(fs.readFileSync(solcPackage, "utf8"))
    const key = createHash("sha256").update(version).update("\n").update(input).digest("hex")
    return path.join(path.dirname(solcPackage), "..", ".cache", "facet-solc", `${key}.json`)
  }).pipe(Effect.option)

const readCached = (file: Option.Option<string>) =>
  Option.match(file, {
    onNone: () => Effect.succeedNone,
    onSome: (f) => Effect.try(() => fs.readFileSync(f, "utf8")).pipe(Effect.option)
  })

/** Written whole under a name of its own, then renamed: a process reading it meanwhile sees all or nothing. */
const writeCached = (file: Option.Option<string>, output: string) =>
  Option.match(file, {
    onNone: () => Effect.void,
    onSome: (f) =>
      Effect.try(() => {
        fs.mkdirSync(path.dirname(f), { recursive: true })
        const partial = `${f}.${process.pid}.partial`
        fs.writeFileSync(partial, output)
        fs.renameSync(partial, f)
      }).pipe(Effect.ignore)
  })

/** The contract `name` of `source` in solc's standard JSON output, if it is there. */
const contractIn = (output: string, source: string, name: string) => {
  const parsed: unknown = JSON.parse(output)
  const contracts =
    typeof parsed === "object" && parsed !== null && "contracts" in parsed ? JSON.stringify(parsed.contracts) : "{}"
  const all: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>> = JSON.parse(contracts)
  const contract = all[source]?.[name]
  return contract === undefined
    ? Option.none()
    : Option.some({ abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` satisfies Hex })
}

/** solc's standard JSON input for one Solidity file: its source, optimised, asking ABI and creation bytecode. */
const standardInput = (file: string) =>
  Effect.try({
    try: () =>
      JSON.stringify({
        language: "Solidity",
        sources: { [path.basename(file)]: { content: fs.readFileSync(file, "utf8") } },
        settings: {
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } }
        }
      }),
    catch: (cause) => new DevnetError({ message: `cannot read ${file}`, cause })
  })

/** Where the compiler's output for `file` as it is now is kept (none when the cache cannot be placed). */
export const cachedOutputPath = (file: string) => Effect.flatMap(standardInput(file), cacheFile)

/** Compiles one contract of a Solidity file with solc from npm (no network): its ABI and creation bytecode. */
export const compileContract = (file: string, name: string) =>
  Effect.gen(function* () {
    const source = path.basename(file)
    const input = yield* standardInput(file)
    const cache = yield* cacheFile(input)
    // a cached output that does not parse or lacks the contract is compiled again, not trusted
    const cached = Option.flatMap(yield* readCached(cache), (output) =>
      Option.flatten(Option.liftThrowable(contractIn)(output, source, name))
    )
    if (Option.isSome(cached)) return cached.value
    const solc = yield* loadSolc
    const output = yield* Effect.try({
      try: () => solc.compile(input),
      catch: (cause) => new DevnetError({ message: `cannot compile ${name} from ${file}`, cause })
    })
    const contract = yield* Effect.try({
      try: () => contractIn(output, source, name),
      catch: (cause) => new DevnetError({ message: `solc's output for ${file} does not parse`, cause })
    })
    if (Option.isNone(contract)) {
      return yield* new DevnetError({ message: `cannot compile ${name} from ${file}: ${output.slice(0, 2000)}` })
    }
    yield* writeCached(cache, output)
    return contract.value
  })
