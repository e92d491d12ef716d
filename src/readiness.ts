import { SqlClient } from "@effect/sql"
import { Effect, Ref } from "effect"

/**
 * What `/health` reports: each part of the service marks itself ready (the database once migrated;
 * indexers and dispatchers add theirs), and the database is pinged on every check.
 */
export class Readiness extends Effect.Service<Readiness>()("facet/Readiness", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const parts = yield* Ref.make<ReadonlyMap<string, string>>(new Map([["migrations", "pending"]]))

    const mark = (part: string, status: "ok" | string) => Ref.update(parts, (m) => new Map(m).set(part, status))

    const report = Effect.gen(function* () {
      const database = yield* sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as("ok"),
        Effect.catchAll(() => Effect.succeed("unreachable"))
      )
      const checks: Record<string, string> = { database }
      for (const [part, status] of yield* Ref.get(parts)) checks[part] = status
      const ready = Object.values(checks).every((status) => status === "ok")
      return { ready, checks }
    })

    return { mark, report } as const
  })
}) {}
