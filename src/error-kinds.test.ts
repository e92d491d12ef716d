import { describe, expect, it } from "@effect/vitest"
import { productionFiles, sourceOf } from "../test/source-files.js"

/**
 * One kind of error: every error the production code declares is a `Schema.TaggedError`
 * (docs/internals/architecture.md, Conventions). A thrown `Error` is kept only where a throw (or a Node
 * callback's Error) is the mechanism, and the boundary that catches it turns it into a tagged error; those
 * few are listed here, so a new one is a decision, not a habit.
 */
const FOLDERS: ReadonlyArray<string> = ["src", "indexer", "custody", "http", "bench"]
// bench/peers is a package of its own (the peers measured against), not this project's code
const SKIPPED_DIRS = new Set(["node_modules", "test", "bench/peers"])
const THROWN_ERRORS: ReadonlyArray<string> = [
  // the devnet simulators' synchronous code throws these; their servers answer with the chain's error
  "src/devnet/solana/solana-chain.ts: RpcFailure extends Error",
  "src/devnet/tron/tron-ledger.ts: Rejection extends Error",
  // handed to Node's socket lookup callback, which takes an Error; the HTTP client fails with its RequestError
  "src/webhooks/destination-guard.ts: ForbiddenDestination extends Error"
]

/** Every error of another kind than `Schema.TaggedError`: "file: Name extends Error", "file:line: Data.TaggedError". */
const otherKinds = (): ReadonlyArray<string> =>
  FOLDERS.flatMap((folder) => productionFiles(folder, SKIPPED_DIRS)).flatMap((file) => {
    const text = sourceOf(file)
    const lineOf = (index: number) => text.slice(0, index).split("\n").length
    const thrown = [...text.matchAll(/class\s+(\w+)\s+extends\s+(?:globalThis\.)?Error\b/g)].map(
      (m) => `${file}: ${m[1]} extends Error`
    )
    const data = [...text.matchAll(/\bData\.(?:TaggedError|Error)\b/g)].map(
      (m) => `${file}:${lineOf(m.index)}: ${m[0]}`
    )
    return [...thrown, ...data]
  })

describe("error kinds", () => {
  it("every error is a Schema.TaggedError, but the few thrown Errors listed", () => {
    expect([...otherKinds()].sort()).toEqual([...THROWN_ERRORS].sort())
  })
})
