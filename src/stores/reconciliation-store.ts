import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Chain } from "../domain/chain.js"
import { type Difference, LatestRun } from "../domain/reconciliation.js"

const decodeLatest = Schema.decodeUnknown(Schema.Array(LatestRun))

/** Every statement on `reconciliation_runs`: each run of a chain's reconciliation, the latest read by /health and /metrics. */
export class ReconciliationStore extends Effect.Service<ReconciliationStore>()("facet/ReconciliationStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const record = Effect.fn("ReconciliationStore.record")(function* (run: {
      readonly chain: Chain
      readonly started: Date
      readonly height: bigint | undefined
      readonly checked: number
      readonly skipped: number
      readonly differences: ReadonlyArray<Difference>
    }) {
      yield* sql`INSERT INTO reconciliation_runs (chain, started_at, height, checked, skipped, differences)
                 VALUES (${run.chain}, ${run.started}, ${run.height?.toString() ?? null}, ${run.checked}, ${run.skipped}, ${JSON.stringify(run.differences)}::jsonb)`
    })

    /** The latest run of each chain that has one. */
    const latest = Effect.gen(function* () {
      const rows = yield* sql`
        SELECT DISTINCT ON (chain) chain, finished_at, differences::text AS differences FROM reconciliation_runs ORDER BY chain, id DESC`
      return yield* decodeLatest(rows)
    })

    return { record, latest } as const
  })
}) {}
