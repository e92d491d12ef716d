/**
 * HTML made safe by default: `html` escapes every value placed in it, unless the value is HTML already (made
 * by `html`, or marked by `raw` — an explicit, greppable choice for markup this code rendered itself).
 * Pages are built from these, never by concatenating strings.
 */
export interface Html {
  readonly _tag: "Html"
  readonly text: string
}

/** What a template may hold: text (escaped), HTML (as it is), lists of either, or nothing (`undefined`, `false`: left out). */
export type HtmlValue = string | number | Html | ReadonlyArray<string | number | Html> | undefined | false

const isHtml = (value: unknown): value is Html =>
  typeof value === "object" && value !== null && "_tag" in value && value._tag === "Html"

/** Text as HTML text or an attribute value (quoted). */
export const escapeHtml = (value: string): string =>
  value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")

const render = (value: HtmlValue): string => {
  if (value === undefined || value === false) return ""
  if (isHtml(value)) return value.text
  if (Array.isArray(value)) return value.map((one: string | number | Html) => render(one)).join("")
  return escapeHtml(String(value))
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<HtmlValue>): Html => ({
  _tag: "Html",
  text: strings.reduce((out, part, i) => out + part + (i < values.length ? render(values[i]) : ""), "")
})

/** Markup placed as it is: only for what this code rendered itself (an SVG made here). */
export const raw = (markup: string): Html => ({ _tag: "Html", text: markup })

/** The headers every page carries: its Content-Security-Policy, no sniffing, no referrer, no caching. */
export const pageHeaders = (csp: string) => ({
  "content-security-policy": csp,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
})
