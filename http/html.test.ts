import { describe, expect, it } from "@effect/vitest"
import { html, raw } from "./html.js"

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
})
