import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { decodeAll, decodeFirst } from "./rows.js"

/** A block the indexer has read up to, or one of the window it keeps to find a reorg's ancestor. */
export interface StoredBlock {
  readonly number: bigint
  readonly hash: string
}

/** A block as `indexed_blocks` keeps it (its time as the chain gave it, none when it gave none). */
export type IndexedBlockRow = {
  readonly chain: string
  readonly number: string
  readonly hash: string
  readonly parent_hash: string
  readonly block_time: Date | null
}

const BlockRow = Schema.Struct({ number: Schema.BigInt, hash: Schema.String })
const CursorRow = Schema.Struct({
  number: Schema.BigInt,
  hash: Schema.String,
  started_at_block: Schema.NullOr(Schema.BigInt)
})
/** What a standby runner sees of a chain another runner indexes (cursor, how long it has not moved, who holds it). */
const StandbyRow = Schema.Struct({
  cursor: Schema.NullOr(Schema.String),
  idle_ms: Schema.NullOr(Schema.Number),
  holder: Schema.NullOr(Schema.String)
})
export type StandbyRow = typeof StandbyRow.Type
const ChainRow = Schema.Struct({ chain: Schema.String })

/** How many blocks below the cursor the window keeps (a reorg deeper than this is a finality halt). */
const BLOCK_WINDOW = 512n

/**
 * Every statement on the indexers' own tables: `indexer_cursors` (where each chain's indexer goes on from),
 * `indexed_blocks` (the window of hashes a reorg walks back through) and `indexer_leases` (the fence: the
 * one holder allowed to write a chain). The attribution store composes the fragments marked so into its
 * block-write statements, so a block and its cursor stay one transaction and one round trip.
 */
export class IndexerStore extends Effect.Service<IndexerStore>()("facet/IndexerStore", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Takes the chain's fence whoever had it (the cluster chose this holder). */
    const takeLease = (chain: string, holder: string) =>
      sql`INSERT INTO indexer_leases (chain, holder) VALUES (${chain}, ${holder})
          ON CONFLICT (chain) DO UPDATE SET holder = excluded.holder, taken_at = clock_timestamp()`.pipe(Effect.asVoid)

    const releaseLease = (chain: string, holder: string) =>
      sql`DELETE FROM indexer_leases WHERE chain = ${chain} AND holder = ${holder}`.pipe(Effect.asVoid)

    /**
     * Whether `holder` still holds the chain, read FOR SHARE: a takeover waits until the caller's transaction
     * ends, and a transaction begun after it finds another name.
     */
    const holdsLease = (chain: string, holder: string) =>
      Effect.map(
        sql`SELECT holder FROM indexer_leases WHERE chain = ${chain} AND holder = ${holder} FOR SHARE`,
        (rows) => rows.length > 0
      )

    /**
     * Fragment: the fence read FOR SHARE and the batch's blocks stored, one statement whose one row (the
     * holder) is there only if the fence still names it; `work_mem` raised for the rest of the transaction.
     */
    const holdAndStoreBlocks = (chain: string, holder: string, blocks: ReadonlyArray<IndexedBlockRow>) =>
      sql<{ holder: string }>`
        WITH lease AS (SELECT holder FROM indexer_leases WHERE chain = ${chain} AND holder = ${holder} FOR SHARE),
        blocks AS (
          INSERT INTO indexed_blocks ${sql.insert(blocks)}
          ON CONFLICT (chain, number) DO UPDATE SET hash = excluded.hash, parent_hash = excluded.parent_hash, block_time = excluded.block_time
        )
        SELECT holder, set_config('work_mem', '64MB', true) AS work_mem FROM lease`

    const cursor = (chain: string) =>
      sql`SELECT block_number::text AS number, block_hash AS hash, started_at_block::text AS started_at_block
          FROM indexer_cursors WHERE chain = ${chain}`.pipe(Effect.flatMap(decodeFirst(CursorRow)))

    /** The chains an indexer has stored a cursor for. */
    const cursorChains = sql`SELECT chain FROM indexer_cursors ORDER BY chain`.pipe(
      Effect.flatMap(decodeAll(ChainRow)),
      Effect.map((rows) => rows.map((r) => r.chain))
    )

    /** A chain's first cursor with its block; false when another process stored one first (kept as it is). */
    const startCursor = (block: IndexedBlockRow) =>
      Effect.gen(function* () {
        const [stored] = yield* sql`
          INSERT INTO indexer_cursors (chain, block_number, block_hash, started_at_block)
          VALUES (${block.chain}, ${block.number}, ${block.hash}, ${block.number})
          ON CONFLICT (chain) DO NOTHING RETURNING chain`
        if (stored === undefined) return false
        yield* sql`INSERT INTO indexed_blocks ${sql.insert(block)} ON CONFLICT (chain, number) DO NOTHING`
        return true
      })

    /** Fragment: the cursor at `to` (stored if the chain has none, with `startedAt` as where it started). */
    const setCursor = (chain: string, to: StoredBlock, startedAt: bigint | undefined) =>
      sql`INSERT INTO indexer_cursors (chain, block_number, block_hash, started_at_block)
          VALUES (${chain}, ${to.number.toString()}, ${to.hash}, ${startedAt?.toString() ?? null})
          ON CONFLICT (chain) DO UPDATE SET block_number = excluded.block_number, block_hash = excluded.block_hash, updated_at = now()`

    /** Fragment: the cursor moved to `to` unless it is there or past it already (writes that commit out of order). */
    const moveCursorForward = (chain: string, to: StoredBlock) =>
      sql`UPDATE indexer_cursors SET block_number = ${to.number.toString()}, block_hash = ${to.hash}, updated_at = now()
          WHERE chain = ${chain} AND block_number < ${to.number.toString()}`

    /** The cursor and the block window's end in one statement; `cursorStep` is a fragment above (or none). */
    const stepAndTrim = (chain: string, last: bigint, cursorStep: Option.Option<ReturnType<typeof setCursor>>) =>
      sql`
        WITH stored_cursor AS (${Option.getOrElse(cursorStep, () => sql`SELECT 1`)})
        DELETE FROM indexed_blocks WHERE chain = ${chain} AND number < ${(last - BLOCK_WINDOW).toString()}`.pipe(
        Effect.asVoid
      )

    /** A reorg: the window above the ancestor goes and the cursor goes back to it. */
    const rollBackTo = (chain: string, ancestor: StoredBlock) =>
      Effect.zipRight(
        sql`DELETE FROM indexed_blocks WHERE chain = ${chain} AND number > ${ancestor.number.toString()}`,
        sql`UPDATE indexer_cursors SET block_number = ${ancestor.number.toString()}, block_hash = ${ancestor.hash}, updated_at = now()
            WHERE chain = ${chain}`
      ).pipe(Effect.asVoid)

    /** The window's blocks at or below `number`, newest first (by the column itself: ordering its text would put 99 above 117). */
    const blocksAtOrBelow = (chain: string, number: bigint) =>
      sql`SELECT number::text AS number, hash FROM indexed_blocks WHERE chain = ${chain} AND number <= ${number.toString()}
          ORDER BY indexed_blocks.number DESC`.pipe(Effect.flatMap(decodeAll(BlockRow)))

    /** The newest stored block at or below `number`. */
    const latestBlockAtOrBelow = (chain: string, number: bigint) =>
      sql`SELECT number::text AS number, hash FROM indexed_blocks WHERE chain = ${chain} AND number <= ${number.toString()}
          ORDER BY indexed_blocks.number DESC LIMIT 1`.pipe(Effect.flatMap(decodeFirst(BlockRow)))

    /** What a standby runner reads of a chain: its cursor, how long ago it moved, who holds the fence. */
    const standbyView = (chain: string) =>
      sql`
        SELECT c.block_number::text AS cursor, floor(extract(epoch FROM now() - c.updated_at) * 1000)::float8 AS idle_ms,
               (SELECT holder FROM indexer_leases WHERE chain = ${chain}) AS holder
        FROM (SELECT 1) one LEFT JOIN indexer_cursors c ON c.chain = ${chain}`.pipe(
        Effect.flatMap(decodeFirst(StandbyRow))
      )

    /** A devnet reset: every chain's window, fence and cursor go (the next start begins afresh). */
    const forgetAll = Effect.all([
      sql`DELETE FROM indexed_blocks`,
      sql`DELETE FROM indexer_leases`,
      sql`DELETE FROM indexer_cursors`
    ]).pipe(Effect.asVoid)

    return {
      takeLease,
      releaseLease,
      holdsLease,
      holdAndStoreBlocks,
      cursor,
      cursorChains,
      startCursor,
      setCursor,
      moveCursorForward,
      stepAndTrim,
      rollBackTo,
      blocksAtOrBelow,
      latestBlockAtOrBelow,
      standbyView,
      forgetAll
    } as const
  })
}) {}
