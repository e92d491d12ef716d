import * as fs from "node:fs"
import * as path from "node:path"

/** The repository's root, for the structural tests that read the source. */
export const repositoryRoot = path.resolve(import.meta.dirname, "..")

/** The folders of production code: the kernel and the features. */
export const PRODUCTION_FOLDERS: ReadonlyArray<string> = ["src", "indexer", "custody", "http"]

/**
 * Every production `.ts` file under `dir` (relative to the root, `/`-separated), recursively, tests left
 * out; a folder named in `skipped` (by name or by its path from the root) is not entered.
 */
export const productionFiles = (dir: string, skipped: ReadonlySet<string> = new Set()): ReadonlyArray<string> =>
  fs.readdirSync(path.join(repositoryRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`
    if (entry.isDirectory())
      return skipped.has(entry.name) || skipped.has(relative) ? [] : productionFiles(relative, skipped)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [relative] : []
  })

/** A file's text, by its path from the root. */
export const sourceOf = (file: string): string => fs.readFileSync(path.join(repositoryRoot, file), "utf8")
