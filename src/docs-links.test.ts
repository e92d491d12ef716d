import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The documentation holds together: the README stays a door (8 KB at most), every page under docs/ is
 * reachable from the index, every relative link (and `#anchor`) in the README, docs/ and the folder
 * READMEs points at something that exists, and no file points at the shared folder beside the repository
 * (its contract and decisions are copied in: docs/reference/).
 */
const root = path.resolve(import.meta.dirname, "..")
const FOLDER_READMES = ["custody/README.md", "indexer/README.md", "bench/README.md"]
const SKIPPED_DIRS = new Set(["node_modules", ".git", ".facet", "scratch"])

const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8")

/** Every file under `dir` (relative to the root), recursively. */
const filesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name)
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : filesUnder(relative)
    return entry.isFile() ? [relative] : []
  })

const markdownUnder = (dir: string) => filesUnder(dir).filter((file) => file.endsWith(".md"))

/** The files git knows (tracked, and new ones not ignored); the working tree when git is not there. */
const repositoryFiles = (): ReadonlyArray<string> => {
  try {
    const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: root,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024
    })
    return [...new Set(listed.split("\0"))].filter((file) => file !== "" && fs.existsSync(path.join(root, file)))
  } catch {
    return filesUnder(".")
  }
}

/** Markdown without its fenced code blocks (no heading or link in there is one). */
const withoutFences = (text: string) => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "")

/** Markdown without fenced code blocks and inline code, where brackets are not links. */
const prose = (text: string) => withoutFences(text).replace(/`[^`\n]*`/g, "")

/** Every link target in a Markdown text: `[text](target)`, and `src`/`href` of inline HTML. */
const linkTargets = (text: string): ReadonlyArray<string> => {
  const body = prose(text)
  const markdown = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? "")
  const html = [...body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? "")
  return [...markdown, ...html].filter((target) => target !== "")
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")

/** The anchors GitHub gives a page's headings: lowercased, punctuation dropped, each space a hyphen. */
const anchorsOf = (text: string): ReadonlySet<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const match of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const heading = (match[1] ?? "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-")
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** The links of `file` that do not resolve, as "file → target (why)". */
const brokenLinks = (file: string): ReadonlyArray<string> =>
  linkTargets(read(file)).flatMap((target) => {
    if (isExternal(target)) return []
    const [pathPart = "", anchor] = target.split("#", 2)
    const resolved = pathPart === "" ? file : path.normalize(path.join(path.dirname(file), decodeURI(pathPart)))
    if (resolved.startsWith("..") || path.isAbsolute(resolved)) return [`${file} → ${target} (outside the repository)`]
    if (!fs.existsSync(path.join(root, resolved))) return [`${file} → ${target} (no such file)`]
    if (anchor === undefined || anchor === "" || !resolved.endsWith(".md")) return []
    return anchorsOf(read(resolved)).has(anchor) ? [] : [`${file} → ${target} (no such heading)`]
  })

describe("the documentation", () => {
  it("README.md is a door of at most 8 KB", () => {
    expect(fs.statSync(path.join(root, "README.md")).size).toBeLessThanOrEqual(8192)
  })

  it("every page under docs/ is linked from docs/README.md", () => {
    const index = "docs/README.md"
    const linked = new Set(
      linkTargets(read(index))
        .filter((target) => !isExternal(target))
        .map((target) => path.normalize(path.join("docs", target.split("#")[0] ?? "")))
    )
    const unlinked = markdownUnder("docs").filter((page) => page !== index && !linked.has(page))
    expect(unlinked).toEqual([])
  })

  it("every relative link in the README, docs/ and the folder READMEs resolves", () => {
    const pages = ["README.md", ...FOLDER_READMES, ...markdownUnder("docs")]
    expect(pages.flatMap(brokenLinks)).toEqual([])
  })

  it("no file points at the shared folder outside the repository", () => {
    const needle = ["..", "shared"].join("/")
    const mentions = repositoryFiles().filter((file) => {
      const bytes = fs.readFileSync(path.join(root, file))
      return !bytes.subarray(0, 8000).includes(0) && bytes.toString("utf8").includes(needle)
    })
    expect(mentions).toEqual([])
  })
})
