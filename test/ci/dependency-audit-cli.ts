import { spawnSync } from "node:child_process"
import { auditVerdict } from "./dependency-audit.js"

/**
 * CI's dependency audit (`.ci/run`): `npm audit --json` on the production dependencies; exit 1 on a
 * critical vulnerability with a fix available. Where the advisory endpoint cannot be reached the audit
 * says so and passes, unless FACET_AUDIT_REQUIRED=1 (set it where CI has the network).
 */
const audit = spawnSync("npm", ["audit", "--json", "--omit=dev"], { encoding: "utf8" })
const verdict = auditVerdict(audit.stdout)
if (verdict.kind === "critical") {
  console.error(`dependency audit: critical vulnerabilities with a fix available: ${verdict.packages.join(", ")}`)
  process.exitCode = 1
} else if (verdict.kind === "not_run") {
  console.error(`dependency audit: NOT RUN — ${verdict.reason}`)
  process.exitCode = process.env.FACET_AUDIT_REQUIRED === "1" ? 1 : 0
} else {
  console.log(`dependency audit: no critical vulnerability with a fix available (${verdict.checked} lesser findings)`)
}
