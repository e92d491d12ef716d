import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { AuditLog, type AuditFilter } from "../../src/audit/audit-log.js"
import { auditPage } from "./policy-pages.js"
import { allowed, ConsoleGuards, htmlResponse, SECURE_HEADERS } from "./route-kit.js"

/** The filter in this request's query: an act, part of a name, and whole days (`until` includes its day). */
const auditFilter = Effect.map(HttpServerRequest.HttpServerRequest, (request): AuditFilter => {
  const params = new URL(request.url, "http://console").searchParams
  const day = (name: string, plusDays: number) => {
    const text = params.get(name) ?? ""
    const date = /^\d{4}-\d{2}-\d{2}$/.test(text) ? new Date(`${text}T00:00:00Z`) : undefined
    return date === undefined || Number.isNaN(date.getTime())
      ? undefined
      : new Date(date.getTime() + plusDays * 86_400_000)
  }
  return {
    action: params.get("action") ?? undefined,
    actor: params.get("actor") ?? undefined,
    since: day("since", 0),
    until: day("until", 1),
    before: params.get("before") ?? undefined,
    limit: 100
  }
})

/** The audit log, for the roles that may read it: filtered, a page at a time, and every matching row as CSV. */
export const AuditRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { signedIn } = yield* ConsoleGuards
    const audit = yield* AuditLog

    yield* router.get(
      "/console/audit",
      signedIn((session) =>
        allowed(
          session,
          "audit",
          Effect.gen(function* () {
            const filter = yield* auditFilter
            return htmlResponse(auditPage(session, filter, yield* audit.list(session.merchantId, filter)))
          })
        )
      )
    )
    yield* router.get(
      "/console/audit.csv",
      signedIn((session) =>
        allowed(
          session,
          "audit",
          Effect.gen(function* () {
            const filter = { ...(yield* auditFilter), before: undefined, limit: 100_000 }
            const rows = yield* audit.list(session.merchantId, filter)
            return HttpServerResponse.text(audit.csv(rows), {
              contentType: "text/csv; charset=utf-8",
              headers: {
                ...SECURE_HEADERS,
                "content-disposition": `attachment; filename="audit-${session.merchantId}.csv"`
              }
            })
          })
        )
      )
    )
  })
)
