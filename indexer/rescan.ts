import { Effect, Option, Schema } from "effect"
import { type ChainClient, ChainRpcError } from "../src/chains/chain-client.js"
import { attributeTransfers } from "./attribution.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { IndexerStore } from "../src/stores/indexer-store.js"
import { AttributionStore } from "./attribution-store.js"
import { checkCovers } from "./chain-indexer.js"
import { UntracedBlockStore } from "../src/stores/untraced-block-store.js"
import { WatchList } from "./watch-list.js"

export class RescanRefused extends Schema.TaggedError<RescanRefused>()("RescanRefused", { message: Schema.String }) {}

/**
 * Re-reads final blocks `from`–`to` that the indexer has already passed and writes what it missed:
 * transfers already recorded are left as they are (unique per chain, hash, event index and destination),
 * so a rescan can only add, never credit twice. New rows are final at once: credited, announced, and
 * their orders settled. The indexer's cursor is not touched.
 */
/** How far a rescan may read: the node's final height, the indexer's cursor, and the lower of the two. */
const reach = (client: ChainClient) =>
  Effect.gen(function* () {
    const finalized = yield* client.finalized
    const cursor = yield* IndexerStore.pipe(Effect.flatMap((store) => store.cursor(client.chain)))
    const indexed = Option.match(cursor, { onNone: () => -1n, onSome: (c) => c.number })
    return { finalized, indexed, limit: finalized < indexed ? finalized : indexed }
  })

export const rescan = Effect.fn("rescan")(function* (
  client: ChainClient,
  from: bigint,
  to: bigint | undefined,
  batchSize: number
) {
  const assetStore = yield* AssetStore
  const store = yield* AttributionStore
  const chain = client.chain
  const { finalized, indexed, limit } = yield* reach(client)
  const last = to ?? limit
  if (from > last) return yield* new RescanRefused({ message: `nothing to rescan: block ${from} is after ${last}` })
  if (last > finalized)
    return yield* new RescanRefused({
      message: `${chain}: only final blocks can be rescanned; block ${last} is above the final height ${finalized}`
    })
  if (last > indexed)
    return yield* new RescanRefused({
      message: `${chain}: the indexer has not read block ${last} yet (it is at ${indexed}); it will read it itself`
    })
  const decimals = new Map((yield* assetStore.decimalsOf(chain)).map((r) => [r.currency, r.decimals]))
  const watch = new WatchList(chain)
  yield* watch.refresh
  let added = 0
  // the last block read: the next one read must extend it (a node that left blocks out between two
  // batches, or answered them from two branches, cannot pass)
  let previous: { readonly number: bigint; readonly hash: string } | undefined
  for (let start = from; start <= last; start += BigInt(batchSize)) {
    const end = start + BigInt(batchSize) - 1n < last ? start + BigInt(batchSize) - 1n : last
    // what it could not read fails the rescan, saying where it stopped: never a success over blocks unread
    const stopped = (error: ChainRpcError) =>
      new ChainRpcError({
        chain,
        message: `${chain} rescan of ${from}–${last} stopped at block ${start} (${added} transfers added before it): ${error.message}`
      })
    const blocks = yield* client.blocks(start, end).pipe(Effect.mapError(stopped))
    yield* checkCovers(client, blocks, start, end).pipe(Effect.mapError(stopped))
    const first = blocks[0]
    if (previous !== undefined && first !== undefined && first.parentHash !== previous.hash) {
      return yield* stopped(
        new ChainRpcError({
          chain,
          message: `block ${first.number} does not extend block ${previous.number} read before it: blocks between them were left out, or read from another branch`
        })
      )
    }
    previous = blocks.at(-1) ?? previous
    const writes = blocks.map((block) => ({
      block: {
        chain,
        number: block.number,
        hash: block.hash,
        parentHash: block.parentHash,
        timestamp: block.timestamp,
        untraced: block.untraced
      },
      hits: attributeTransfers(block.transfers, watch, (c) => decimals.get(c))
    }))
    added += (yield* store.writeBlocks(writes, finalized, "rescan", { mode: "rescan" })).detected
    yield* Effect.logInfo(`${chain} rescan: blocks ${start}–${end} of ${from}–${last}, ${added} transfers added so far`)
  }
  // where numbers are skipped, the range's last slots were "skipped" on the node's word: the first block
  // after the range must name the last one read as its parent
  if (client.skipsNumbers && previous !== undefined && last < finalized) {
    const end = last + 64n < finalized ? last + 64n : finalized
    const [after] = yield* client.blocks(last + 1n, end)
    if (after === undefined || after.parentHash !== previous.hash) {
      return yield* new ChainRpcError({
        chain,
        message: `${chain} rescan of ${from}–${last}: the slots after block ${previous.number} cannot be proven skipped (${after === undefined ? `no block read in ${last + 1n}–${end}` : `block ${after.number} does not extend it`}); ${added} transfers added`
      })
    }
  }
  return { chain, from, to: last, added }
})

/**
 * Re-reads every block recorded as untraced (untraced-blocks.ts) that is final and behind the cursor, in
 * runs of consecutive blocks — meant against a node that can trace them (an archive node given as the
 * chain's URL for this command): BNB their contracts sent is credited now, and each block traced in full
 * is cleared. Blocks still untraced stay recorded.
 */
export const rescanUntraced = Effect.fn("rescanUntraced")(function* (client: ChainClient, batchSize: number) {
  const untraced = yield* UntracedBlockStore
  const chain = client.chain
  const { limit } = yield* reach(client)
  const open = (yield* untraced.open(chain)).filter((n) => n <= limit)
  const runs: Array<[bigint, bigint]> = []
  for (const n of open) {
    const run = runs[runs.length - 1]
    if (run !== undefined && run[1] + 1n === n) run[1] = n
    else runs.push([n, n])
  }
  let added = 0
  for (const [from, to] of runs) added += (yield* rescan(client, from, to, batchSize)).added
  const left = yield* untraced.open(chain)
  return { chain, blocks: open.length, added, stillUntraced: left.length }
})
