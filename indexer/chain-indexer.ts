import { Cause, Duration, Effect, Fiber, Option, Schedule, Schema } from "effect"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import { type ChainBlock, type ChainClient, ChainRpcError } from "../src/chains/chain-client.js"
import { ChainIdentityMismatch, checkChainIdentity } from "../src/chains/chain-identity.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { IndexerStore } from "../src/stores/indexer-store.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import type { Network } from "../src/config.js"
import { attributeTransfers } from "./attribution.js"
import { AttributionStore, type BlockCursor } from "./attribution-store.js"
import { DEFAULT_CATCH_UP_WRITERS, makeCatchUpWriter } from "./catch-up-writer.js"
import { earliestWatched, startBlockFor } from "./start-block.js"
import { type ChainIndexerStatus, currentStatus, reportStatus, standbyStatus } from "../src/indexing/indexer-status.js"
import { WatchList } from "./watch-list.js"

export class ReorgTooDeep extends Schema.TaggedError<ReorgTooDeep>()("ReorgTooDeep", {
  chain: Schema.String,
  message: Schema.String
}) {}

export interface IndexerOptions {
  /** Blocks fetched per batch; the next batches are fetched while this one is written. */
  readonly batchSize: number
  /** Batches asked of the node ahead of the one being written (DEFAULT_PREFETCH_BATCHES unless set). */
  readonly prefetchBatches?: number
  /** Batches of final blocks written at once while catching up (DEFAULT_CATCH_UP_WRITERS unless set; 1: one at a time). */
  readonly writers?: number
  readonly pollInterval: Duration.DurationInput
  /**
   * How long an indexer another one took the chain from waits before it takes the chain back (10 s unless
   * set): time for the cluster to stop it if it is the stale one. Past that, the cluster still runs it.
   */
  readonly retakeAfter?: Duration.DurationInput
  /** Where a chain with no cursor starts: its current head unless set. */
  readonly startBlock: Option.Option<bigint>
  /** Recorded with the chain's genesis; a node of another network is refused. */
  readonly network: Network
}

/** What a node answers for `from`–`to` must cover the range: every block, or (slots) every produced one. */
export const checkCovers = (client: ChainClient, answer: ReadonlyArray<ChainBlock>, from: bigint, to: bigint) => {
  const complete = client.skipsNumbers
    ? answer.every(
        (b, i) => b.number >= from && b.number <= to && (i === 0 || b.number > (answer[i - 1]?.number ?? to))
      )
    : answer.length === Number(to - from + 1n) && answer.every((b, i) => b.number === from + BigInt(i))
  return complete
    ? Effect.void
    : Effect.fail(
        new ChainRpcError({
          chain: client.chain,
          message: `the node answered ${answer.length} blocks for ${from}–${to}, not the whole range; reading them again`
        })
      )
}

/**
 * A failed read of the head or of a batch is asked again in place, a few times with growing pauses (0.5 s
 * to 8 s, ~15 s in all), before the loop restarts from the stored cursor: a node that rate-limits or fails
 * now and then no longer costs everything fetched ahead.
 */
const CALL_RETRY = Schedule.exponential(Duration.millis(500)).pipe(Schedule.intersect(Schedule.recurs(5)))

/**
 * Batches fetched ahead while one is written (FACET_INDEXER_PREFETCH in AppConfig): with a node 30 ms
 * away one batch in flight left the writer waiting; with four, catching up runs near a local node's speed.
 */
export const DEFAULT_PREFETCH_BATCHES = 4

const holderId = () => `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`

/**
 * One chain's indexer. Which process runs it is decided by its caller: the cluster singleton of
 * indexers.ts (one runner per chain), or a test. It takes the chain's fence over as it starts, resumes
 * from its durable cursor, fetches ahead while writing
 * (each block in one transaction with the cursor), follows the head, detects reorgs by the parent-hash
 * chain and rolls back to the common ancestor; a fork deeper than the chain's finality window halts it.
 */
export const runChainIndexer = (client: ChainClient, options: IndexerOptions) =>
  Effect.gen(function* () {
    const indexerStore = yield* IndexerStore
    const transactionStore = yield* TransactionStore
    const assetStore = yield* AssetStore
    const store = yield* AttributionStore
    const chain = client.chain
    let holder = holderId()
    const watch = new WatchList(chain)
    const decimals = new Map((yield* assetStore.decimalsOf(chain)).map((r) => [r.currency, r.decimals]))

    // what a standby runner read from the database (the stored cursor) stays shown until this one knows more
    let status: ChainIndexerStatus = {
      ...((yield* currentStatus(chain)) ?? standbyStatus(chain)),
      state: "starting",
      detail: "",
      nodeAnsweredAt: Date.now()
    }
    // errors in a row: the wait before trying again doubles with each (1 s … 10 s), so a sick node is not hammered
    let errorsInRow = 0
    const report = (patch: Partial<ChainIndexerStatus>) => {
      // reading on (a batch written, or nothing left to read) ends a run of failures
      const progressed = patch.state === "catching_up" || patch.state === "following"
      status = { ...status, ...patch, ...(progressed ? { failing: undefined } : {}) }
      return reportStatus(status)
    }

    /*
     * The fence. The chain's row in indexer_leases names the one indexer allowed to write, and every write
     * transaction reads it FOR SHARE (AttributionStore). Taking it over updates the row: that waits for a
     * write of the previous holder still in flight, and each write it begins afterwards finds another name
     * and fails (LeaseLost). The cluster hands the chain to one runner at a time only as long as its shard
     * locks hold; a holder paused, cut off from its lock connection or not yet stopped while its shard moves
     * may still be running, and this keeps it from committing after the new one started. No expiry, no
     * election: the cluster has chosen this one, so it takes the row whoever had it.
     */
    let mustTakeOver = true
    const takeOver = Effect.gen(function* () {
      holder = holderId()
      // a holding of its own: the node's silence is counted from here, not from what a standby runner saw
      status = { ...status, nodeAnsweredAt: Date.now() }
      yield* indexerStore.takeLease(chain, holder)
      mustTakeOver = false
      yield* Effect.logInfo(`${chain} indexer runs here (${holder})`)
    })
    const release = Effect.suspend(() => indexerStore.releaseLease(chain, holder)).pipe(Effect.ignore)

    const loadCursor = Effect.gen(function* () {
      const stored = yield* indexerStore.cursor(chain)
      if (Option.isSome(stored)) return { number: stored.value.number, hash: stored.value.hash }
      // a new chain starts at the configured block, or at its head — earlier when addresses were issued
      // before it first ran (startBlockFor): nothing older can pay them. That start is stored at once: a
      // restart must go on from it, not from a later head that would skip what was paid in between.
      const start = Option.getOrElse(options.startBlock, () => -1n)
      const first = start >= 0n ? start : yield* client.head
      const [at] = yield* client.blocks(first, first)
      if (at === undefined || at.number !== first) {
        return yield* new ChainRpcError({ chain, message: `the node has no block ${first} to start from yet` })
      }
      const earliest = start >= 0n ? null : yield* earliestWatched(chain)
      const { block, truncated } = yield* startBlockFor(client, at, earliest)
      if (truncated) {
        yield* Effect.logError(
          `${chain}: addresses were issued from ${earliest?.toISOString()} on, before this chain's indexer first ran, but its nodes hold nothing older than block ${block.number}: ` +
            `what was paid to them before it is not read here — rescan from the block of ${earliest?.toISOString()} with an archive node (npm run indexer -- --chain ${chain} --rescan-from N)`
        )
      } else if (block.number !== at.number) {
        yield* Effect.logWarning(
          `${chain}: addresses were issued from ${earliest?.toISOString()} on, before this chain's indexer first ran; it starts at block ${block.number}, ${at.number - block.number} blocks before the head ${at.number}, and reads them first`
        )
      }
      yield* store.startCursor(
        { chain, number: block.number, hash: block.hash, parentHash: block.parentHash, timestamp: block.timestamp },
        holder
      )
      return { number: block.number, hash: block.hash }
    })

    const finalityHalt = (message: string) =>
      new ReorgTooDeep({
        chain,
        message: `${chain}: a fork deeper than the finality window: ${message}; refusing to reverse final credits — an operator must look at it`
      })

    /**
     * Walks back over the blocks we stored until the node agrees with one: the common ancestor. A fork that
     * would reverse a credit already final halts instead. A fork that reaches below the node's final
     * height but holds no final credit is a branch we followed (a node served it) and could not leave in
     * time — the fault campaign found it: an indexer stalled by a failing node while the chain grew past
     * the branch. Nothing final is undone by leaving it, so it is left, loudly.
     */
    const findAncestor = (cursor: BlockCursor, finalized: bigint) =>
      Effect.gen(function* () {
        // newest first, by the number itself (ordering its text would put 9 above 10)
        const stored = yield* indexerStore.blocksAtOrBelow(chain, cursor.number)
        for (const row of stored) {
          const n = row.number
          const [theirs] = yield* client.blocks(n, n)
          if (theirs !== undefined && theirs.number === n && theirs.hash === row.hash) {
            const final = yield* transactionStore.firstFinalDepositAbove(chain, n)
            if (Option.isSome(final)) {
              return yield* finalityHalt(
                `going back to block ${n} would reverse deposits already final (from block ${final.value})`
              )
            }
            if (n < finalized) {
              yield* Effect.logWarning(
                `${chain}: the branch indexed above block ${n} is not the node's chain, whose final height is ${finalized}; no final credit is on it, so it is rolled back (a node served a branch it left)`
              )
            }
            return { number: n, hash: row.hash }
          }
        }
        return yield* finalityHalt(`no stored block below ${cursor.number} is on the node's chain`)
      })

    /**
     * Whether the node's block at `number` (at or below its final height) is the one we indexed there: pending
     * deposits are confirmed, and blocks written final, only on the chain the node calls final — not on one
     * that a lagging node, or another node behind the same URL, served us.
     */
    const finalIsOurs = (number: bigint, hash: string, finalized: bigint) =>
      Effect.flatMap(client.blockHash(number), (theirs) =>
        Option.contains(theirs, hash)
          ? Effect.succeed(true)
          : Effect.as(
              Effect.logWarning(
                `${chain}: the node's block ${number} (final height ${finalized}) is ${Option.getOrElse(theirs, () => "missing")}, not the ${hash} we indexed: nothing there is confirmed until they agree`
              ),
              false
            )
      )

    const index = Effect.gen(function* () {
      let cursor = yield* loadCursor
      const writer = yield* makeCatchUpWriter(chain, holder, options.writers ?? DEFAULT_CATCH_UP_WRITERS, cursor)
      yield* report({ cursorStored: true, cursor: cursor.number.toString() })
      yield* Effect.logInfo(`${chain} indexer resuming after block ${cursor.number} (${watch.size} watched addresses)`)
      let windowStart = Date.now()
      let windowBlocks = 0
      // where the window's time went: waiting for blocks from the node, or for a writer (with two writing at
      // once, a batch is handed over as soon as one is free)
      let windowFetchMs = 0
      let windowWriteMs = 0
      let lastProgressLog = 0
      const prefetchBatches = options.prefetchBatches ?? DEFAULT_PREFETCH_BATCHES
      // batches asked of the node beyond the one written next, in order: with a remote node a batch is
      // mostly waiting, so several in flight keep the writer busy. Each covers what was asked then.
      let ahead: Array<{
        readonly from: bigint
        readonly to: bigint
        readonly fiber: Fiber.RuntimeFiber<ReadonlyArray<ChainBlock>, ChainRpcError>
      }> = []
      const dropAhead = Effect.suspend(() => {
        const fibers = ahead.map((a) => a.fiber)
        ahead = []
        return Fiber.interruptAll(fibers)
      })
      // the head and the final height from one node: one node's head beside another's final height would
      // make blocks final that the node we read never called final
      const readTip = Effect.flatMap(
        client.tip,
        ({ head, finalized }): Effect.Effect<readonly [bigint, bigint], ChainRpcError> =>
          finalized > head
            ? Effect.fail(
                new ChainRpcError({
                  chain,
                  message: `the node says block ${finalized} is final above its head ${head}`
                })
              )
            : Effect.succeed([head, finalized] as const)
      ).pipe(Effect.retry(CALL_RETRY))
      // catching up, the head and final height are asked while a batch is written: no batch waits for them
      let tipAhead: Option.Option<Fiber.RuntimeFiber<readonly [bigint, bigint], ChainRpcError>> = Option.none()
      for (;;) {
        const [head, finalized] = Option.isSome(tipAhead) ? yield* Fiber.join(tipAhead.value) : yield* readTip
        tipAhead = Option.none()
        status = { ...status, nodeAnsweredAt: Date.now() }
        errorsInRow = 0
        yield* watch.refresh
        if (cursor.number >= head) {
          yield* writer.drain
          const upTo = finalized < cursor.number ? finalized : cursor.number
          const ours = yield* indexerStore.latestBlockAtOrBelow(chain, upTo)
          if (Option.isNone(ours) || (yield* finalIsOurs(ours.value.number, ours.value.hash, finalized)))
            yield* store.confirm(chain, upTo, head, holder)
          yield* report({
            state: "following",
            head: head.toString(),
            cursor: cursor.number.toString(),
            lagBlocks: 0,
            lagSeconds: 0,
            watchedAddresses: watch.size
          })
          yield* Effect.sleep(options.pollInterval)
          continue
        }
        const from = cursor.number + 1n
        // what was asked ahead no longer follows the cursor (a reorg went back): ask again from here
        if (ahead[0]?.from !== from) yield* dropAhead
        let next = (ahead[ahead.length - 1]?.to ?? cursor.number) + 1n
        // with nothing asked yet (a start, a reorg), the first batch is a tenth of the size: the writer
        // begins after a short answer instead of a full one, and the full batches load meanwhile
        const starting = ahead.length === 0
        // at most two more each time: asked all at once, the batches' answers would all be decoded at once,
        // and that burst held up the process's other work (the cluster's shard-lock refresh timed out)
        for (let added = 0; added < 2 && ahead.length <= prefetchBatches && next <= head; added++) {
          const size = BigInt(
            starting && added === 0 ? Math.max(1, Math.ceil(options.batchSize / 10)) : options.batchSize
          )
          const end = next + size - 1n < head ? next + size - 1n : head
          // a batch that fails (a rate limit, a node that cannot give it) is asked again where it stands: the
          // batches fetched ahead of it are kept, not thrown away with a restart of the loop
          ahead.push({
            from: next,
            to: end,
            fiber: yield* Effect.forkScoped(Effect.retry(client.blocks(next, end), CALL_RETRY))
          })
          next = end + 1n
        }
        const asked = ahead.shift()
        if (asked === undefined) continue
        const to = asked.to
        const fetchStarted = Date.now()
        const current = yield* Fiber.join(asked.fiber)
        windowFetchMs += Date.now() - fetchStarted
        yield* checkCovers(client, current, from, to)
        const last = current[current.length - 1]
        if (last !== undefined && head - last.number > BigInt(options.batchSize))
          tipAhead = Option.some(yield* Effect.forkScoped(readTip))
        // the batch must extend what we wrote, block by block; the first that does not starts a reorg
        let valid = 0
        let tip = cursor
        for (const block of current) {
          if (tip.hash !== "" && block.parentHash !== tip.hash) break
          tip = { number: block.number, hash: block.hash }
          valid += 1
        }
        if (valid > 0) {
          const writes = current.slice(0, valid).map((block) => ({
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
          // blocks at or below the final height are written final only if the node's final chain has the
          // batch's block there (the node that answered the height may not be the one that served the batch)
          const finalInBatch = writes.filter((w) => w.block.number <= finalized).at(-1)?.block
          const batchFinal =
            finalInBatch === undefined || (yield* finalIsOurs(finalInBatch.number, finalInBatch.hash, finalized))
              ? finalized
              : cursor.number
          // catching up, this waits only when the writes already in flight are as many as allowed
          const writeStarted = Date.now()
          yield* writer.write(writes, batchFinal)
          windowWriteMs += Date.now() - writeStarted
          cursor = tip
          windowBlocks += valid
        }
        const reorged = valid < current.length
        if (reorged) {
          yield* writer.drain
          const ancestor = yield* findAncestor(cursor, finalized)
          const reversed = yield* store.rollbackTo(chain, ancestor, holder)
          yield* Effect.logWarning(
            `${chain} reorg: block ${cursor.number + 1n} does not extend ${cursor.hash}; rolled back to ${ancestor.number}, ${reversed} transfers reversed`
          )
          cursor = ancestor
          yield* writer.wentBackTo(ancestor)
        }
        if (reorged) yield* dropAhead
        // slots the client vouched for as skipped are passed (the next block's parent is still our tip)
        if (client.skipsNumbers && !reorged && to > cursor.number) cursor = { number: to, hash: cursor.hash }
        const elapsed = (Date.now() - windowStart) / 1000
        const rate = elapsed > 0 ? windowBlocks / elapsed : 0
        // what is shown is what is written: the batches still being written are not counted yet
        const written = writer.pending === 0 ? cursor : yield* writer.committed
        const lagBlocks = Number(head - written.number)
        const lagSeconds =
          last === undefined
            ? 0
            : Math.max(
                0,
                Math.round(Date.now() / 1000 - (last.timestamp > 1e12 ? last.timestamp / 1000 : last.timestamp))
              )
        yield* report({
          state: lagBlocks > options.batchSize ? "catching_up" : "following",
          head: head.toString(),
          cursor: written.number.toString(),
          lagBlocks,
          lagSeconds,
          watchedAddresses: watch.size,
          blocksPerSecond: Math.round(rate)
        })
        if (Date.now() - lastProgressLog > 5000 && lagBlocks > options.batchSize) {
          lastProgressLog = Date.now()
          const eta = rate > 0 ? Math.round(lagBlocks / rate) : -1
          const share = (ms: number) => `${Math.round((100 * ms) / Math.max(1, Date.now() - windowStart))}%`
          yield* Effect.logInfo(
            `${chain} catching up: block ${written.number} of ${head}, ${rate.toFixed(1)} blocks/s, lag ${lagBlocks} blocks, ETA ${eta >= 0 ? `${eta} s` : "unknown"} (waiting for the node ${share(windowFetchMs)}, for a writer ${share(windowWriteMs)})`
          )
          windowStart = Date.now()
          windowBlocks = 0
          windowFetchMs = 0
          windowWriteMs = 0
        }
      }
      // what was asked ahead ends with it (an error, an interruption)
    }).pipe(Effect.scoped)

    const run = Effect.gen(function* () {
      if (mustTakeOver) yield* takeOver
      yield* report({ state: "starting", detail: "" })
      yield* checkChainIdentity(chain, options.network, yield* client.genesis)
      yield* watch.refresh
      return yield* index
    })

    // what an operator must look at: retrying would only repeat it
    const isHalt = (cause: Cause.Cause<unknown>) =>
      Option.exists(Cause.failureOption(cause), (e) => e instanceof ReorgTooDeep || e instanceof ChainIdentityMismatch)
    return yield* run.pipe(
      // taken over by another: stop writing; the cluster stops this one soon if it is the stale one, and
      // if it still runs it after that, the chain is this one's again
      Effect.catchTag("LeaseLost", () =>
        Effect.suspend(() => {
          mustTakeOver = true
          return Effect.all(
            [
              report({ state: "standby", detail: "another indexer took this chain over" }),
              Effect.logWarning(`${chain} indexer: another indexer took this chain over; this one stopped writing`),
              Effect.sleep(options.retakeAfter ?? Duration.seconds(10))
            ],
            { discard: true }
          )
        })
      ),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) || isHalt(cause)
          ? Effect.failCause(cause)
          : Effect.suspend(() => {
              const wait = Duration.millis(Math.min(10_000, 1_000 * 2 ** Math.min(errorsInRow, 4)))
              errorsInRow += 1
              return Effect.zipRight(
                Effect.zipRight(
                  Effect.suspend(() => {
                    const reason = Cause.pretty(cause).split("\n")[0] ?? ""
                    return report({
                      state: "retrying",
                      detail: reason,
                      failing: { since: status.failing?.since ?? Date.now(), reason }
                    })
                  }),
                  Effect.logWarning(
                    `${chain} indexer error (${errorsInRow} in a row); retrying in ${Duration.format(wait)}`,
                    cause
                  )
                ),
                Effect.sleep(wait)
              )
            })
      ),
      Effect.repeat(Schedule.forever),
      Effect.tapError((error) => report({ state: "halted", detail: error.message })),
      Effect.ensuring(release)
    )
  })
