import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Chain } from "../domain/chain.js"
import { type Difference, LatestRun } from "../domain/reconciliation.js"
import { CustodyStore } from "./custody-store.js"
import { decodeAll } from "./rows.js"

const decodeLatest = Schema.decodeUnknown(Schema.Array(LatestRun))
const ExplainedRow = Schema.Struct({ i: Schema.Number, explained: Schema.String })

/**
 * Every statement on `reconciliation_runs` (each run of a chain's reconciliation, the latest read by /health
 * and /metrics), and the one that explains balances from what was recorded (deposits, custody's transfers).
 */
export class ReconciliationStore extends Effect.Service<ReconciliationStore>()("facet/ReconciliationStore", {
  dependencies: [CustodyStore.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const custody = yield* CustodyStore

    /**
     * What the ledger explains at each address, per asset, at the height its balance was read: deposits
     * recorded up to that height, plus what custody itself moved in and out there (its transfers in blocks
     * up to that height, and the fees the address paid in its native asset). EVM addresses in any case; the
     * others exactly. One statement for a page of addresses; the answers in the pairs' order.
     */
    const explain = (
      chain: Chain,
      pairs: ReadonlyArray<{
        readonly address: string
        readonly currency: string
        readonly decimals: number
        readonly height: bigint
      }>
    ) =>
      Effect.flatMap(
        sql`
          WITH p AS (
            SELECT p.i, p.currency, p.decimals, p.height,
                   CASE WHEN ${chain} = 'BEP20' THEN lower(p.address) ELSE p.address END AS norm
            FROM jsonb_to_recordset(${JSON.stringify(pairs.map((pair, i) => ({ i, address: pair.address, currency: pair.currency, decimals: pair.decimals, height: pair.height.toString() })))}::jsonb)
              AS p (i int, address text, currency text, decimals int, height bigint)),
          deposits AS (
            SELECT p.i, sum(t.amount) AS amount FROM p JOIN transactions t
              ON t.chain = ${chain} AND t.currency = p.currency AND t.type = 'deposit' AND t.status IN ('pending', 'confirmed')
             AND t.block_number <= p.height
             AND (CASE WHEN ${chain} = 'BEP20' THEN lower(t.to_address) ELSE t.to_address END) = p.norm
            GROUP BY p.i),
          custody AS (${custody.transfersInBlocks(chain)}),
          moved_in AS (
            SELECT p.i, sum(c.amount) AS amount FROM p JOIN custody c
              ON c.status <> 'reverted' AND c.currency = p.currency AND c.block_number <= p.height AND c.to_norm = p.norm GROUP BY p.i),
          moved_out AS (
            SELECT p.i, sum(c.amount) AS amount FROM p JOIN custody c
              ON c.status <> 'reverted' AND c.currency = p.currency AND c.block_number <= p.height AND c.from_norm = p.norm GROUP BY p.i),
          fees AS (
            SELECT p.i, sum(c.fee) AS amount FROM p
              JOIN wallet_asset_policies a ON a.chain = ${chain} AND a.currency = p.currency AND a.is_native
              JOIN custody c ON c.block_number <= p.height AND c.fee_payer_norm = p.norm GROUP BY p.i)
          -- in base units, then scaled by an exact 1e-decimals: a division rounds at ~16 digits, and an 18-decimal
          -- balance with fee dust (a main wallet's BNB) read as a difference of a few wei (the money-out campaign)
          SELECT p.i, trim_scale(
                   (coalesce(d.amount, 0) * ('1e' || p.decimals)::numeric
                    + coalesce(mi.amount, 0) - coalesce(mo.amount, 0) - coalesce(f.amount, 0)) * ('1e-' || p.decimals)::numeric
                 )::text AS explained
          FROM p LEFT JOIN deposits d ON d.i = p.i LEFT JOIN moved_in mi ON mi.i = p.i
                 LEFT JOIN moved_out mo ON mo.i = p.i LEFT JOIN fees f ON f.i = p.i
          ORDER BY p.i`,
        (rows) => Effect.map(decodeAll(ExplainedRow)(rows), (decoded) => decoded.map((r) => r.explained))
      )

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

    return { explain, record, latest } as const
  })
}) {}
