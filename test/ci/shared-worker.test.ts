import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { repositoryRoot, sourceOf } from "../source-files.js"

/**
 * Test files share a worker process (vitest.config.ts): a module is evaluated once per worker, and
 * `process.env` outlives the file that set it (test/shared-worker-setup.ts puts it back after each file).
 * So no test file or test helper sets `process.env` as it loads: a service under test gets its settings as
 * configuration (`TestAppLive(overrides, { env })`, `startService(dir, name, env)`).
 */
const TEST_FOLDERS: ReadonlyArray<string> = ["src", "http", "indexer", "custody", "test", "client"]

/** Set before they could take their settings as configuration; the fault campaign's owner moves them. */
const KNOWN: ReadonlySet<string> = new Set(["test/faults/faults.test.ts", "test/faults/money-out.test.ts"])

const testCode = (dir: string): ReadonlyArray<string> =>
  fs.existsSync(path.join(repositoryRoot, dir))
    ? fs.readdirSync(path.join(repositoryRoot, dir), { withFileTypes: true }).flatMap((entry) => {
        const relative = `${dir}/${entry.name}`
        if (entry.isDirectory()) return entry.name === "node_modules" ? [] : testCode(relative)
        return relative.endsWith(".test.ts") || (relative.startsWith("test/") && relative.endsWith(".ts"))
          ? [relative]
          : []
      })
    : []

/** Lines at a module's top level (not indented) that write to `process.env`. */
const topLevelEnvWrites = (file: string): ReadonlyArray<string> =>
  sourceOf(file)
    .split("\n")
    .filter((line) =>
      /^(process\.env(\.\w+|\[[^\]]+\])\s*(=|\?\?=|\|\|=)[^=]|Object\.assign\(process\.env\b)/.test(line)
    )
    .map((line) => `${file}: ${line}`)

describe("test files share a worker", () => {
  it("no test file or test helper sets process.env as it loads", () => {
    const files = TEST_FOLDERS.flatMap(testCode)
    expect(files.length).toBeGreaterThan(90)
    expect(files.filter((file) => !KNOWN.has(file)).flatMap(topLevelEnvWrites)).toEqual([])
  })
})
