import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Ref } from "effect"
import { IndexerStatus, prometheusMetrics } from "../../indexer/indexer-status.js"
import { Readiness } from "../../src/readiness.js"
import { FacetApi } from "../api.js"

export const SystemHandlers = HttpApiBuilder.group(FacetApi, "system", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    const indexers = yield* IndexerStatus
    const indexerHealth = Effect.map(Ref.get(indexers), (m) =>
      [...m.values()].map((s) => ({
        chain: s.chain, state: s.state, head: s.head, cursor: s.cursor, lag_blocks: s.lagBlocks, lag_seconds: s.lagSeconds,
        watched_addresses: s.watchedAddresses, detail: s.detail
      })))
    return handlers
      .handle("health", () =>
        Effect.gen(function*() {
          const { checks, ready } = yield* readiness.report
          const indexers = yield* indexerHealth
          if (ready) return { status: "ok" as const, checks, indexers }
          // 503 with the detail of what is not ready, so operators see why
          return yield* HttpServerResponse.json({ error: "service is not ready", status: "unavailable", checks, indexers }, { status: 503 }).pipe(
            Effect.orDie
          )
        }))
      .handle("metrics", () => Effect.map(Ref.get(indexers), (m) => prometheusMetrics([...m.values()])))
  }))
