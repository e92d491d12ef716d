import { Effect, Either, Option, Schedule } from "effect"
import type { ChainBlock, ChainClient } from "../src/chains/chain-client.js"
import { WalletStore } from "../src/stores/wallet-store.js"

/** Clocks differ (ours against a chain's producers): a new chain starts this long before the first address. */
const CLOCK_MARGIN_MS = 5 * 60_000

/** A block's time in ms (TRON's headers carry ms, the others seconds); 0 when the node gave none. */
const blockMillis = (block: ChainBlock) => (block.timestamp > 1e12 ? block.timestamp : block.timestamp * 1000)

/**
 * The oldest watched address of a chain (receive and main wallets), if any: an address issued before its
 * chain's indexer first ran — its node refused the indexer at the very start (a ban, an outage), or the chain
 * was added later — may have been paid before the head the indexer would start at.
 */
export const earliestWatched = Effect.fn("earliestWatched")(function* (chain: string) {
  const wallets = yield* WalletStore
  return Option.getOrNull(yield* wallets.earliestWatched(chain))
})

/** The first block at or after `n` (a Solana slot may be skipped: the next few are looked at), up to `head`. */
const firstFrom = (client: ChainClient, n: bigint, head: bigint) =>
  Effect.gen(function* () {
    for (const span of [0n, 3n, 15n, 63n]) {
      const to = n + span < head ? n + span : head
      const [block] = yield* client.blocks(n, to)
      if (block !== undefined) return block
      if (to === head) break
    }
    return undefined
  }).pipe(
    // a node's passing trouble is not taken for a ledger that starts later: asked again a few times
    Effect.retry(Schedule.intersect(Schedule.exponential("250 millis"), Schedule.recurs(2))),
    Effect.either
  )

/** Where a new chain's indexer starts, and whether the nodes still hold every block back to the first address. */
interface StartBlock {
  readonly block: ChainBlock
  /** The nodes hold nothing older than `block`, which is after the first address was issued: what was paid before it cannot be read here. */
  readonly truncated: boolean
}

const startAt = (block: ChainBlock, truncated = false): StartBlock => ({ block, truncated })

/**
 * Where a chain with no cursor starts (its blocks are read from the next one on): the head when nothing is
 * watched yet — nothing older can pay a fresh address — else a block from before the oldest watched address
 * was issued (less a margin for clocks), found by stepping back from the head in doubling steps: a few calls
 * for what a late start missed. Nothing was paid before an address existed, so nothing is skipped. Where the
 * nodes no longer hold blocks that old (a pruned ledger), the oldest block they hold, found by halving the
 * gap, and `truncated`: the indexer says so, and a rescan with an archive node reads the rest.
 */
export const startBlockFor = Effect.fn("startBlockFor")(function* (
  client: ChainClient,
  head: ChainBlock,
  earliest: Date | null
) {
  if (earliest === null) return startAt(head)
  const before = earliest.getTime() - CLOCK_MARGIN_MS
  // a block without a time (a node that gave none) is not proof it is early enough
  const earlyEnough = (block: ChainBlock) => block.timestamp > 0 && blockMillis(block) <= before
  if (earlyEnough(head)) return startAt(head)
  let step = 1n
  let held = head
  for (;;) {
    const probe = head.number - step > 0n ? head.number - step : 0n
    const found = yield* firstFrom(client, probe, head.number)
    if (Either.isLeft(found)) {
      // not held that far back: the oldest block held lies between the probe and the last block read
      let gone = probe
      while (held.number - gone > 1n) {
        const middle = gone + (held.number - gone) / 2n
        const at = yield* firstFrom(client, middle, held.number)
        if (Either.isLeft(at)) gone = middle
        else if (at.right === undefined || at.right.number >= held.number) break
        else if (earlyEnough(at.right)) return startAt(at.right)
        else held = at.right
      }
      return startAt(held, true)
    }
    if (found.right !== undefined) {
      held = found.right
      if (earlyEnough(found.right)) return startAt(found.right)
    }
    // the chain is younger than the address (a devnet): its first block, which nothing could have paid
    if (probe === 0n) return startAt(held)
    step *= 2n
  }
})
