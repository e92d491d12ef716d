import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Chain } from "../domain/chain.js"
import { decodeAll, decodeScalar } from "./rows.js"

/** A block as the indexer writes it, with why its contract calls could not be traced (none: they were). */
export interface TracedBlock {
  readonly chain: Chain
  readonly number: bigint
  readonly hash: string
  readonly untraced?: string | undefined
}

/** What is still untraced on a chain: how many blocks, the first and the last. */
const UntracedSummary = Schema.Struct({
  chain: Schema.String,
  blocks: Schema.Number,
  first: Schema.String,
  last: Schema.String,
  reason: Schema.String
})
export type UntracedSummary = typeof UntracedSummary.Type
const CountRow = Schema.Struct({ n: Schema.Number })
const NumberRow = Schema.Struct({ number: Schema.BigInt })

/**
 * Every statement on `untraced_blocks`: the blocks whose contract calls the node could not trace (migration 0027): recorded in the
 * transaction that writes them, dropped with a reorg, marked when a rescan traced them, summed for
 * /health, /metrics and reconciliation.
 */
export class UntracedBlockStore extends Effect.Service<UntracedBlockStore>()("facet/UntracedBlockStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The untraced ones of a batch being written (the caller's transaction); a block read again replaces its row. */
    const record = Effect.fn("UntracedBlockStore.record")(function* (blocks: ReadonlyArray<TracedBlock>) {
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
    const traced = Effect.fn("UntracedBlockStore.traced")(function* (blocks: ReadonlyArray<TracedBlock>) {
      const done = blocks.filter((b) => b.untraced === undefined)
      const [first] = done
      if (first === undefined) return
      yield* sql`UPDATE untraced_blocks SET rescanned_at = clock_timestamp()
                 WHERE chain = ${first.chain} AND rescanned_at IS NULL AND number = ANY(${done.map((b) => b.number.toString())}::bigint[])`
    })

    /** A reorg dropped the blocks above `number`: what they could not show is moot (a branch read again records its own). */
    const dropAbove = Effect.fn("UntracedBlockStore.dropAbove")(function* (chain: Chain, number: bigint) {
      yield* sql`DELETE FROM untraced_blocks WHERE chain = ${chain} AND number > ${number.toString()} AND rescanned_at IS NULL`
    })

    /** The untraced blocks still open on a chain, in order (what a rescan reads). */
    const open = Effect.fn("UntracedBlockStore.open")(function* (chain: Chain) {
      const rows = yield* sql`
        SELECT number::text AS number FROM untraced_blocks WHERE chain = ${chain} AND rescanned_at IS NULL
        ORDER BY untraced_blocks.number`
      return (yield* decodeAll(NumberRow)(rows)).map((r) => r.number)
    })

    /** How many open untraced blocks a chain has in a range (what a reconciliation difference may be hiding). */
    const countIn = Effect.fn("UntracedBlockStore.countIn")(function* (chain: Chain, from: bigint, to: bigint) {
      const rows = yield* sql`
        SELECT count(*)::int AS n FROM untraced_blocks
        WHERE chain = ${chain} AND rescanned_at IS NULL AND number BETWEEN ${from.toString()} AND ${to.toString()}`
      return yield* decodeScalar(CountRow, "n", () => 0)(rows)
    })

    /** Per chain: the open untraced blocks (none: an empty list). */
    const summary = Effect.fn("UntracedBlockStore.summary")(function* () {
      const rows = yield* sql`
        SELECT chain, count(*)::int AS blocks, min(number)::text AS first, max(number)::text AS last,
               (array_agg(reason ORDER BY number DESC))[1] AS reason
        FROM untraced_blocks WHERE rescanned_at IS NULL GROUP BY chain ORDER BY chain`
      return yield* decodeAll(UntracedSummary)(rows)
    })

    return { record, traced, dropAbove, open, countIn, summary } as const
  })
}) {}
