import { Chunk, Clock, Duration, Effect, Option, Schedule, Schema, Stream } from "effect"

/**
 * The slowest a reader may take a streamed file: `minBytesPerSecond` on average, with a window's worth of
 * slack either way — it may fall behind that pace by at most `minBytesPerSecond × window` bytes, and bank at
 * most as much ahead of it. Only time spent waiting on the reader counts: the source's own time (the database
 * sorting a year before its first row) is not the reader's.
 *
 * Why slack and not "so many bytes in each window": the bytes are counted as they are handed to the socket,
 * and the kernel passes them on in bursts — a stalled reader's connection takes ~4 MB at once on Linux, then
 * frees room again only a megabyte or two at a time. A reader keeping pace shows no progress at all for as
 * long as that takes, and a window shorter than a burst would cut it off; an allowance of a burst or more
 * never does, and still cuts a reader that stopped after at most two windows.
 */
export interface ReaderPace {
  readonly minBytesPerSecond: number
  readonly window: Duration.Duration
}

/** A stream cut off because its reader fell too far behind the slowest pace allowed. */
export class ReaderTooSlow extends Schema.TaggedError<ReaderTooSlow>()("ReaderTooSlow", {
  behindBytes: Schema.Number,
  minBytesPerSecond: Schema.Number
}) {
  override get message() {
    return `the reader fell ${this.behindBytes} bytes behind the slowest pace allowed (${this.minBytesPerSecond} bytes a second)`
  }
}

/**
 * Where a reader stands: the bytes it owes (`owed`: the minimum pace over the time waited on it, less the
 * bytes it took; negative when it is ahead) up to `since`, and whether the stream waits on it now (a chunk
 * handed over, the next not asked for yet).
 */
export interface PaceMeter {
  owed: number
  since: number
  waitingOnReader: boolean
}

export const freshMeter = (now: number): PaceMeter => ({ owed: 0, since: now, waitingOnReader: false })

/** The most a reader may be behind, or ahead: a window at the minimum pace. */
export const allowance = (pace: ReaderPace) => pace.minBytesPerSecond * Duration.toSeconds(pace.window)

/** Brings `owed` up to `now`: the time waited on the reader since the last look is owed at the minimum pace. */
const settle = (meter: PaceMeter, pace: ReaderPace, now: number) => {
  if (meter.waitingOnReader) meter.owed += (pace.minBytesPerSecond * Math.max(0, now - meter.since)) / 1000
  meter.since = now
}

/** The reader asks for the next chunk: the wait on it ends. */
export const asked = (meter: PaceMeter, pace: ReaderPace, now: number) => {
  settle(meter, pace, now)
  meter.waitingOnReader = false
}

/** A chunk of `bytes` handed to the reader: they pay what it owes (credit kept up to the allowance); a wait on it starts. */
export const handedOver = (meter: PaceMeter, pace: ReaderPace, bytes: number, now: number) => {
  settle(meter, pace, now)
  meter.owed = Math.max(meter.owed - bytes, -allowance(pace))
  meter.waitingOnReader = true
}

/** Whether the reader, at `now`, is more than the allowance behind the minimum pace. */
export const tooSlow = (meter: PaceMeter, pace: ReaderPace, now: number) => {
  settle(meter, pace, now)
  return meter.owed > allowance(pace)
}

/**
 * `bytes` as they are pulled, with a watch on the one pulling them (`PaceMeter`), looked at five times a
 * window. A reader found too slow gets `onTooSlow` (the caller cuts its connection and gives its turn
 * back), and any later pull fails with `ReaderTooSlow`. The watch ends with the stream.
 */
export const paced = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  pace: ReaderPace,
  onTooSlow: (cut: ReaderTooSlow) => Effect.Effect<void>
): Stream.Stream<Uint8Array, E | ReaderTooSlow, R> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const pull = yield* Stream.toPull(bytes)
      const meter = freshMeter(yield* Clock.currentTimeMillis)
      let cut: ReaderTooSlow | undefined
      yield* Clock.currentTimeMillis.pipe(
        Effect.map((now) => tooSlow(meter, pace, now)),
        Effect.repeat({
          schedule: Schedule.spaced(Duration.millis(Duration.toMillis(pace.window) / 5)),
          until: (slow) => slow
        }),
        Effect.flatMap(() => {
          const verdict = new ReaderTooSlow({
            behindBytes: Math.round(meter.owed),
            minBytesPerSecond: pace.minBytesPerSecond
          })
          cut = verdict
          return onTooSlow(verdict)
        }),
        Effect.forkScoped
      )
      const next: Effect.Effect<Chunk.Chunk<Uint8Array>, Option.Option<E | ReaderTooSlow>, R> = Effect.gen(
        function* () {
          if (cut !== undefined) return yield* Effect.fail(Option.some(cut))
          asked(meter, pace, yield* Clock.currentTimeMillis)
          const chunk = yield* pull
          const size = Chunk.reduce(chunk, 0, (sum, part) => sum + part.byteLength)
          handedOver(meter, pace, size, yield* Clock.currentTimeMillis)
          return chunk
        }
      )
      return Stream.repeatEffectChunkOption(next)
    })
  )
