import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { html, raw } from "./html.js"

/** Every TypeScript file under a folder, its path relative to `http/`. */
const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [relative(import.meta.dirname, join(dir, entry.name))]
        : []
  )

describe("html", () => {
  it("escapes every value placed in it; HTML made by html or raw is placed as it is, lists joined, nothing left out", () => {
    const name = `<script>alert("x")</script> & 'co'`
    const item = (label: string) => html`<li>${label}</li>`
    const page = html`<p title="${name}">${name}</p><ul>${["a<b", "c"].map(item)}</ul>${undefined}${false}${raw("<svg></svg>")}${42}`
    expect(page.text).toBe(
      `<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</p>` +
        `<ul><li>a&lt;b</li><li>c</li></ul><svg></svg>42`
    )
  })

  it("is the only way pages escape: no file under http/ but html.ts (and this test) calls escapeHtml", () => {
    const callers = sourceFiles(import.meta.dirname).filter(
      (file) =>
        file !== "html.ts" &&
        file !== "html.test.ts" &&
        readFileSync(join(import.meta.dirname, file), "utf8").includes("escapeHtml(")
    )
    expect(callers).toEqual([])
  })
})
