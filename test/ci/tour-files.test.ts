import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The shell examples in the README and docs/ write their answers (the merchant's package with its live API
 * key and webhook secret, orders, ledger files) only where git ignores them — so neither `biome ci .` (which
 * follows .gitignore) nor a `git add -A` ever picks them up after someone follows the tour.
 */
const root = path.resolve(import.meta.dirname, "..", "..")

const markdownFiles = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name)
    if (entry.isDirectory()) return markdownFiles(relative)
    return entry.name.endsWith(".md") ? [relative] : []
  })

const shellBlocks = (markdown: string) =>
  [...markdown.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)].map((match) => match[1] ?? "")

/** The files a shell block writes: `> file`, `>> file`, `-o file`, `--output file`. */
const writtenPaths = (block: string) =>
  [...block.matchAll(/(?:>>?|\s-o|\s--output)\s+([^\s&|;)'"]+)/g)]
    .map((match) => match[1] ?? "")
    .filter((target) => target !== "" && !target.startsWith("/dev/") && !target.startsWith("&"))

const ignoredByGit = (file: string) =>
  spawnSync("git", ["check-ignore", "--no-index", "-q", file], { cwd: root }).status === 0

const documents = ["README.md", ...markdownFiles("docs")]
const written = documents.flatMap((doc) =>
  shellBlocks(fs.readFileSync(path.join(root, doc), "utf8")).flatMap((block) =>
    writtenPaths(block).map((file) => ({ doc, file }))
  )
)

describe("files the documented commands write", () => {
  it("include the tour's merchant and order", () => {
    expect(written.filter(({ doc }) => doc === "README.md").map(({ file }) => file)).toEqual([
      ".facet/merchant.json",
      ".facet/order.json"
    ])
  })

  it.each(written.filter(({ file }) => !path.isAbsolute(file) && !file.startsWith("~")))(
    "$doc writes $file where git (and so biome) ignores it",
    ({ file }) => {
      expect(ignoredByGit(file)).toBe(true)
    }
  )

  it("biome follows the ignore file", () => {
    const config: unknown = JSON.parse(fs.readFileSync(path.join(root, "biome.json"), "utf8"))
    expect(config).toMatchObject({ vcs: { enabled: true, useIgnoreFile: true } })
  })
})
