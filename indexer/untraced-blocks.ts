import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Chain } from "../src/domain/chain.js"
import type { BlockRecord } from "./attribution-store.js"

/** What is still untraced on a chain: how many blocks, the first and the last. */
export interface UntracedSummary {
  readonly chain: string
  readonly blocks: number
  readonly first: string
  readonly last: string
  readonly reason: string
}

/**
 * The blocks whose contract calls the node could not trace (migration 0027), owned here: recorded in the
 * transaction that writes them, dropped with a reorg, marked when a rescan traced them, summed for
 * /health, /metrics and reconciliation.
 */
export class UntracedBlocks extends Effect.Service<UntracedBlocks>()("facet/UntracedBlocks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The untraced ones of a batch being written (the caller's transaction); a block read again replaces its row. */
    const record = Effect.fn("UntracedBlocks.record")(function* (blocks: ReadonlyArray<BlockRecord>) {
      const untraced = blocks.flatMap((b) =>
        b.untraced === undefined
          ? []
          : [{ chain: b.chain, number: b.number.toString(), hash: b.hash, reason: b.untraced }]
      )
      if (untraced.length === 0) return
      yield* sql`INSERT INTO untraced_blocks ${sql.insert(untraced)}
                 ON CONFLICT (chain, number) DO UPDATE SET hash = excluded.hash, reason = excluded.reason, recorded_at = clock_timestamp(), rescanned_at = NULL`
    })

    /** A rescan read these blocks again: the ones traced in full now are done. */
    const traced = Effect.fn("UntracedBlocks.traced")(function* (blocks: ReadonlyArray<BlockRecord>) {
      const done = blocks.filter((b) => b.untraced === undefined)
      const [first] = done
      if (first === undefined) return
      yield* sql`UPDATE untraced_blocks SET rescanned_at = clock_timestamp()
                 WHERE chain = ${first.chain} AND rescanned_at IS NULL AND number = ANY(${done.map((b) => b.number.toString())}::bigint[])`
    })

    /** A reorg dropped the blocks above `number`: what they could not show is moot (a branch read again records its own). */
    const dropAbove = Effect.fn("UntracedBlocks.dropAbove")(function* (chain: Chain, number: bigint) {
      yield* sql`DELETE FROM untraced_blocks WHERE chain = ${chain} AND number > ${number.toString()} AND rescanned_at IS NULL`
    })

    /** The untraced blocks still open on a chain, in order (what a rescan reads). */
    const open = Effect.fn("UntracedBlocks.open")(function* (chain: Chain) {
      const rows = yield* sql<{ number: string }>`
        SELECT number::text AS number FROM untraced_blocks WHERE chain = ${chain} AND rescanned_at IS NULL ORDER BY number`
      return rows.map((r) => BigInt(r.number))
    })

    /** How many open untraced blocks a chain has in a range (what a reconciliation difference may be hiding). */
    const countIn = Effect.fn("UntracedBlocks.countIn")(function* (chain: Chain, from: bigint, to: bigint) {
      const [row] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM untraced_blocks
        WHERE chain = ${chain} AND rescanned_at IS NULL AND number BETWEEN ${from.toString()} AND ${to.toString()}`
      return row?.n ?? 0
    })

    /** Per chain: the open untraced blocks (none: an empty list). */
    const summary = Effect.fn("UntracedBlocks.summary")(function* () {
      return yield* sql<UntracedSummary>`
        SELECT chain, count(*)::int AS blocks, min(number)::text AS first, max(number)::text AS last,
               (array_agg(reason ORDER BY number DESC))[1] AS reason
        FROM untraced_blocks WHERE rescanned_at IS NULL GROUP BY chain ORDER BY chain`
    })

    return { record, traced, dropAbove, open, countIn, summary } as const
  })
}) {}

/** Why /health is degraded: a chain with blocks whose contract calls nobody could trace yet. */
export const untracedReasons = (summary: ReadonlyArray<UntracedSummary>) =>
  summary.map(
    (s) =>
      `${s.chain}: ${s.blocks} block(s) from ${s.first} to ${s.last} could not be traced (${s.reason}): their token and top-level deposits are credited, BNB sent by contracts in them is not until a rescan against a node that can trace them: npm run indexer -- --chain ${s.chain} --rescan-untraced`
  )

/** The same for /metrics. */
export const untracedMetrics = (summary: ReadonlyArray<UntracedSummary>) =>
  [
    "# HELP facet_indexer_untraced_blocks Blocks whose contract calls could not be traced (BNB sent by contracts in them not yet credited).",
    "# TYPE facet_indexer_untraced_blocks gauge",
    ...summary.map((s) => `facet_indexer_untraced_blocks{chain="${s.chain}"} ${s.blocks}`)
  ].join("\n") + "\n"
