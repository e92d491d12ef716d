import { Effect, Fiber, Option } from "effect"
import type { Chain } from "../src/domain/chain.js"
import type { Attributed } from "./attribution.js"
import { AttributionStore, type BlockCursor, type BlockRecord } from "./attribution-store.js"

export type BlockBatch = ReadonlyArray<{ readonly block: BlockRecord; readonly hits: ReadonlyArray<Attributed> }>

/**
 * Batches written at once while catching up (FACET_INDEXER_WRITERS): one writer leaves a core idle while
 * the database works through a statement; two wrote workload B ~1.6–1.9 × as fast on two cores, three
 * slower than two.
 */
export const DEFAULT_CATCH_UP_WRITERS = 2

/**
 * An indexer's writes, in chain order. Catching up — every block of a batch final — up to `writers`
 * batches are written at once, each in a transaction of its own, and they may commit in any order. The
 * stored cursor never names a block past a batch that has not committed: a batch written beside others
 * stores the cursor its predecessors were known to have reached when it began (never its own last
 * block), and the cursor catches up when the writes are drained. A crash leaves the batches past the
 * cursor to be read again, and writing a batch again adds nothing (the store writes each transfer once).
 * A batch with a block not yet final (the head, where reorgs happen) first waits for every earlier one
 * and is written alone with its own cursor, as before.
 */
export const makeCatchUpWriter = Effect.fn("makeCatchUpWriter")(function* (
  chain: Chain,
  holder: string,
  writers: number,
  start: BlockCursor,
  // told when a batch is known written, with the milliseconds from its hand-over (a bench's commit latency)
  onWritten: (tip: BlockCursor, milliseconds: number) => void = () => undefined
) {
  const store = yield* AttributionStore
  type Write = Effect.Effect.Success<ReturnType<typeof store.writeBlocks>>
  type WriteError = Effect.Effect.Error<ReturnType<typeof store.writeBlocks>>
  interface InFlight {
    readonly fiber: Fiber.RuntimeFiber<Write, WriteError>
    readonly tip: BlockCursor
    readonly stores: Option.Option<BlockCursor>
    readonly started: number
  }
  const inFlight: Array<InFlight> = []
  // the last block of the batches committed without a gap before it, and the cursor the database holds
  let committed = start
  let stored = start

  const done = (write: Omit<InFlight, "fiber">) => {
    onWritten(write.tip, performance.now() - write.started)
    committed = write.tip
    if (Option.isSome(write.stores) && write.stores.value.number > stored.number) stored = write.stores.value
  }

  /** The oldest write's outcome, waited for: its failure fails the caller (the batches after it are read again). */
  const awaitOldest = Effect.suspend(() => {
    const oldest = inFlight.shift()
    return oldest === undefined ? Effect.void : Effect.map(Fiber.join(oldest.fiber), () => done(oldest))
  })

  /** The writes that have ended, oldest first, taken in as far as there is no gap. */
  const collectEnded = Effect.gen(function* () {
    for (let oldest = inFlight[0]; oldest !== undefined; oldest = inFlight[0]) {
      if (Option.isNone(yield* Fiber.poll(oldest.fiber))) return
      yield* awaitOldest
    }
  })

  /** Every write waited for, and the cursor stored where they reached. */
  const drain = Effect.gen(function* () {
    while (inFlight.length > 0) yield* awaitOldest
    if (committed.number > stored.number) {
      yield* store.advanceCursor(chain, committed, holder)
      stored = committed
    }
  })

  const write = (batch: BlockBatch, finalized: bigint) =>
    Effect.gen(function* () {
      const last = batch[batch.length - 1]
      if (last === undefined) return
      const tip = { number: last.block.number, hash: last.block.hash }
      if (writers <= 1 || last.block.number > finalized) {
        while (inFlight.length > 0) yield* awaitOldest
        const started = performance.now()
        yield* store.writeBlocks(batch, finalized, holder)
        done({ tip, stores: Option.some(tip), started })
        return
      }
      yield* collectEnded
      // deposits still pending at or below the final height (written before this catch-up) are confirmed
      // while nothing else is written: confirmed inside a batch written beside another, their wallets'
      // balances would be locked after the chain's account, out of the order that keeps two writes from
      // deadlocking. The batches written at once make none (their blocks are final).
      if (inFlight.length === 0) yield* store.confirm(chain, finalized, last.block.number, holder)
      while (inFlight.length >= writers) yield* awaitOldest
      // the cursor this batch stores: as far as the batches before it are known to have committed
      const stores = committed.number > stored.number ? Option.some(committed) : Option.none()
      const started = performance.now()
      const fiber = yield* Effect.forkScoped(
        store.writeBlocks(batch, finalized, holder, { cursor: stores, confirmPending: false })
      )
      inFlight.push({ fiber, tip, stores, started })
    })

  return {
    write,
    drain,
    /** After a rollback (drained first): the cursor the store went back to. */
    wentBackTo: (cursor: BlockCursor) =>
      Effect.sync(() => {
        committed = cursor
        stored = cursor
      }),
    /** The last block written, with every one before it, as far as is known now. */
    committed: Effect.map(collectEnded, () => committed),
    /** Writes not known to have ended. */
    get pending() {
      return inFlight.length
    }
  }
})
