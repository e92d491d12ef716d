import { describe, expect, it } from "@effect/vitest"
import { auditVerdict } from "./dependency-audit.js"

// the shape npm 10 prints (`npm audit --json`, report version 2), cut to what the verdict reads
const report = (vulnerabilities: Record<string, unknown>) =>
  JSON.stringify({ auditReportVersion: 2, vulnerabilities, metadata: {} })

describe("CI's dependency audit", () => {
  it("fails on a critical vulnerability with a fix available, not on one without a fix or a lesser one", () => {
    expect(
      auditVerdict(
        report({
          "form-data": {
            name: "form-data",
            severity: "critical",
            isDirect: false,
            via: [],
            effects: [],
            range: "<2.5.4",
            nodes: [],
            fixAvailable: true
          },
          tronweb: {
            name: "tronweb",
            severity: "critical",
            isDirect: true,
            via: [],
            effects: [],
            range: "*",
            nodes: [],
            fixAvailable: { name: "tronweb", version: "6.1.0", isSemVerMajor: false }
          },
          elliptic: {
            name: "elliptic",
            severity: "critical",
            isDirect: false,
            via: [],
            effects: [],
            range: "*",
            nodes: [],
            fixAvailable: false
          },
          ws: {
            name: "ws",
            severity: "high",
            isDirect: false,
            via: [],
            effects: [],
            range: "*",
            nodes: [],
            fixAvailable: true
          }
        })
      )
    ).toEqual({ kind: "critical", packages: ["form-data", "tronweb (fixed by tronweb@6.1.0)"] })
    expect(auditVerdict(report({ ws: { name: "ws", severity: "high", fixAvailable: true } }))).toEqual({
      kind: "clean",
      checked: 1
    })
  })

  it("says it did not run when the advisory endpoint cannot be reached (as on this project's machine)", () => {
    // recorded here: the registry proxy refuses the bulk advisory endpoint
    const recorded = JSON.stringify({
      message: "405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk",
      method: "POST",
      uri: "https://registry.npmjs.org/-/npm/v1/security/advisories/bulk"
    })
    expect(auditVerdict(recorded)).toEqual({
      kind: "not_run",
      reason: "405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk"
    })
    expect(auditVerdict("npm error")).toMatchObject({ kind: "not_run" })
  })
})
