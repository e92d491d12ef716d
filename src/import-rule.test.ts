import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { productionFiles, repositoryRoot, sourceOf } from "../test/source-files.js"

/**
 * The one-way structure: the kernel (`src/`) imports no feature folder, and the features import the kernel
 * and each other only downward — the indexer, then custody (which reads what the indexer recorded), then
 * the HTTP layer over all of them. The composition root (`src/app.ts`, `src/main.ts`) wires every layer and
 * is the one place allowed to look up. Production code never imports tests or benches.
 */
const LAYERS: ReadonlyArray<string> = ["src", "indexer", "custody", "http"]
const COMPOSITION_ROOT = new Set(["src/app.ts", "src/main.ts"])
const NEVER_IMPORTED = new Set(["test", "bench"])
const root = repositoryRoot

/** Every relative module a file imports (static, side-effect and dynamic imports, re-exports). */
const importsOf = (file: string): ReadonlyArray<string> => {
  const text = sourceOf(file)
  return [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].flatMap((m) => (m[1] === undefined ? [] : [m[1]]))
}

const topFolder = (file: string) => file.split(path.sep)[0] ?? ""

/** The arrows that point the wrong way, as "from → to". */
const wrongWayImports = (): ReadonlyArray<string> =>
  LAYERS.flatMap((layer) => productionFiles(layer)).flatMap((file) =>
    importsOf(file).flatMap((specifier) => {
      const target = path.relative(root, path.resolve(root, path.dirname(file), specifier))
      const from = LAYERS.indexOf(topFolder(file))
      const to = LAYERS.indexOf(topFolder(target))
      if (NEVER_IMPORTED.has(topFolder(target))) return [`${file} → ${target}`]
      return to > from && !COMPOSITION_ROOT.has(file) ? [`${file} → ${target}`] : []
    })
  )

/**
 * Inside custody, the operations engine (`custody/engine/`) knows the lifecycle's shape and no feature: it
 * imports the kernel, itself and custody's shared settings and states only. The features (sweeps, gas
 * funding, withdrawals, energy) reach it only through its public interface — the driver type, the hand-over
 * — never its actor or its handler; the composition root wires each feature's driver into it.
 */
const ENGINE = "custody/engine"
const ENGINE_READS = new Set(["custody/custody-config.ts", "custody/custody-operation.ts"])
const ENGINE_PUBLIC = new Set([
  `${ENGINE}/operation-driver.ts`,
  `${ENGINE}/operations.ts`,
  `${ENGINE}/operation-hand-off.ts`
])

/** Imports across the engine's boundary, either way, that the rule above does not allow. */
const engineBoundaryCrossings = (): ReadonlyArray<string> =>
  LAYERS.flatMap((layer) => productionFiles(layer)).flatMap((file) =>
    importsOf(file).flatMap((specifier) => {
      const target = path
        .relative(root, path.resolve(root, path.dirname(file), specifier))
        .replace(/\.js$/, ".ts")
        .split(path.sep)
        .join("/")
      const fromEngine = file.startsWith(`${ENGINE}/`)
      const toEngine = target.startsWith(`${ENGINE}/`)
      if (fromEngine && !toEngine && topFolder(target) === "custody" && !ENGINE_READS.has(target))
        return [`${file} → ${target}`]
      if (!fromEngine && toEngine && !ENGINE_PUBLIC.has(target) && !COMPOSITION_ROOT.has(file))
        return [`${file} → ${target}`]
      return []
    })
  )

describe("the import rule", () => {
  it("the kernel imports no feature; indexer → custody → http only downward; nothing imports tests or benches", () => {
    expect(wrongWayImports()).toEqual([])
  })

  it("the operations engine imports no custody feature; the features reach it only through its public interface", () => {
    expect(engineBoundaryCrossings()).toEqual([])
  })
})
