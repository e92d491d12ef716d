import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Readiness } from "../../src/readiness.js"
import { FacetApi } from "../api.js"

export const SystemHandlers = HttpApiBuilder.group(FacetApi, "system", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    return handlers.handle("health", () =>
      Effect.gen(function*() {
        const { checks, ready } = yield* readiness.report
        if (ready) return { status: "ok" as const, checks }
        // 503 with the detail of what is not ready, so operators see why
        return yield* HttpServerResponse.json({ error: "service is not ready", status: "unavailable", checks }, { status: 503 }).pipe(
          Effect.orDie
        )
      }))
  }))
