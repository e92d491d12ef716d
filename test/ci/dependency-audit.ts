import { Schema } from "effect"

/**
 * What CI's dependency audit decides from `npm audit --json`: fail on a known critical vulnerability
 * that has a fix available; say plainly when the audit could not run (no advisory endpoint) rather than
 * pass as if it had checked.
 */
const Vulnerability = Schema.Struct({
  name: Schema.String,
  severity: Schema.String,
  // true, false, or the upgrade that fixes it
  fixAvailable: Schema.Union(Schema.Boolean, Schema.Struct({ name: Schema.String, version: Schema.String }))
})
const AuditReport = Schema.Struct({ vulnerabilities: Schema.Record({ key: Schema.String, value: Vulnerability }) })
const AuditFailure = Schema.Struct({ message: Schema.String })

export type AuditVerdict =
  | { readonly kind: "clean"; readonly checked: number }
  | { readonly kind: "critical"; readonly packages: ReadonlyArray<string> }
  | { readonly kind: "not_run"; readonly reason: string }

export const auditVerdict = (json: string): AuditVerdict => {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch {
    return { kind: "not_run", reason: `npm audit printed no JSON: ${json.slice(0, 200)}` }
  }
  const report = Schema.decodeUnknownOption(AuditReport)(parsed)
  if (report._tag === "Some") {
    const vulnerable = Object.values(report.value.vulnerabilities)
    const critical = vulnerable.filter((v) => v.severity === "critical" && v.fixAvailable !== false)
    return critical.length > 0
      ? {
          kind: "critical",
          packages: critical.map(
            (v) =>
              `${v.name}${typeof v.fixAvailable === "object" ? ` (fixed by ${v.fixAvailable.name}@${v.fixAvailable.version})` : ""}`
          )
        }
      : { kind: "clean", checked: vulnerable.length }
  }
  const failure = Schema.decodeUnknownOption(AuditFailure)(parsed)
  return {
    kind: "not_run",
    reason: failure._tag === "Some" ? failure.value.message : "an answer npm audit does not normally give"
  }
}
