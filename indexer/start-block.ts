import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { ChainBlock, ChainClient } from "../src/chains/chain-client.js"

/** Clocks differ (ours against a chain's producers): a new chain starts this long before the first address. */
const CLOCK_MARGIN_MS = 5 * 60_000

/** A block's time in ms (TRON's headers carry ms, the others seconds); 0 when the node gave none. */
const blockMillis = (block: ChainBlock) => (block.timestamp > 1e12 ? block.timestamp : block.timestamp * 1000)

const Earliest = Schema.Struct({ earliest: Schema.NullOr(Schema.DateFromSelf) })

/**
 * The oldest watched address of a chain (receive and main wallets), if any: an address issued before its
 * chain's indexer first ran — its node refused the indexer at the very start (a ban, an outage), or the chain
 * was added later — may have been paid before the head the indexer would start at.
 */
export const earliestWatched = Effect.fn("earliestWatched")(function*(chain: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT min(created_at) AS earliest FROM wallets WHERE network = ${chain} AND kind IN ('receive', 'main')`
  const [row] = yield* Schema.decodeUnknown(Schema.Array(Earliest))(rows).pipe(Effect.orDie)
  return row?.earliest ?? null
})

/** The first block at or after `n` (a Solana slot may be skipped: the next few are looked at), up to `head`. */
const firstFrom = (client: ChainClient, n: bigint, head: bigint) =>
  Effect.gen(function*() {
    for (const span of [0n, 3n, 15n, 63n]) {
      const to = n + span < head ? n + span : head
      const [block] = yield* client.blocks(n, to)
      if (block !== undefined) return block
      if (to === head) break
    }
    return undefined
  })

/**
 * Where a chain with no cursor starts (its blocks are read from the next one on): the head when nothing is
 * watched yet — nothing older can pay a fresh address — else a block from before the oldest watched address
 * was issued (less a margin for clocks), found by stepping back from the head in doubling steps: a few calls
 * for what a late start missed. Nothing was paid before an address existed, so nothing is skipped.
 */
export const startBlockFor = Effect.fn("startBlockFor")(function*(client: ChainClient, head: ChainBlock, earliest: Date | null) {
  if (earliest === null) return head
  const before = earliest.getTime() - CLOCK_MARGIN_MS
  if (head.timestamp > 0 && blockMillis(head) <= before) return head
  let step = 1n
  let lowest = head
  for (;;) {
    const probe = head.number - step > 0n ? head.number - step : 0n
    const block = yield* firstFrom(client, probe, head.number)
    if (block !== undefined) {
      lowest = block
      // a block without a time (a node that gave none) is not proof it is early enough: further back
      if (block.timestamp > 0 && blockMillis(block) <= before) return block
    }
    // the chain is younger than the address (a devnet): its first block, which nothing could have paid
    if (probe === 0n) return lowest
    step *= 2n
  }
})
