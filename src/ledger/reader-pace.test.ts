import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Duration, Effect, Exit, Option, Stream, TestClock } from "effect"
import { asked, freshMeter, handedOver, paced, type ReaderPace, ReaderTooSlow, tooSlow } from "./reader-pace.js"

/** 1,000 bytes a second, 10 s of slack: at most 10,000 bytes behind, or ahead. */
const PACE: ReaderPace = { minBytesPerSecond: 1_000, window: Duration.seconds(10) }
const SECOND = 1_000

/** The first second (0 for never) at which the reader is found too slow, looking once a second until `until`. */
const firstCut = (meter: ReturnType<typeof freshMeter>, from: number, until: number) => {
  for (let t = from; t <= until; t += SECOND) if (tooSlow(meter, PACE, t)) return t
  return 0
}

describe("a reader's pace", () => {
  it("a reader that stops is cut off after two windows: the first on the credit the sockets took, the second behind", () => {
    const meter = freshMeter(0)
    asked(meter, PACE, 0)
    // the kernel's buffers take 4 MB at once: credit, kept up to one window's worth
    handedOver(meter, PACE, 4_000_000, 0)
    expect(firstCut(meter, 0, 60 * SECOND)).toBe(21 * SECOND)
  })

  it("a reader at the minimum pace whose bytes come a window's worth at a time (the kernel's bursts) is never cut off", () => {
    const meter = freshMeter(0)
    asked(meter, PACE, 0)
    handedOver(meter, PACE, 4_000_000, 0)
    for (let t = 0; t < 600 * SECOND; t += SECOND) {
      expect(tooSlow(meter, PACE, t), `at ${t} ms`).toBe(false)
      // nothing moves for a whole window, then a window's worth at once
      if (t > 0 && t % (10 * SECOND) === 0) {
        asked(meter, PACE, t)
        handedOver(meter, PACE, 10_000, t)
      }
    }
  })

  it("time spent waiting on the source (the database sorting its window) is not the reader's", () => {
    const meter = freshMeter(0)
    asked(meter, PACE, 0)
    expect(firstCut(meter, 0, 100 * SECOND)).toBe(0)
    handedOver(meter, PACE, 50, 100 * SECOND)
    // from there it owes the minimum pace: 10 s to use up the slack, 10 s more, and it is a window behind
    expect(firstCut(meter, 100 * SECOND, 200 * SECOND)).toBe(111 * SECOND)
  })

  it.effect("a paced stream whose reader stops is cut off: told once, its next pull fails", () =>
    Effect.gen(function* () {
      const told = yield* Deferred.make<ReaderTooSlow>()
      const bytes = Stream.make(new Uint8Array(2_000), new Uint8Array(2_000)).pipe(Stream.rechunk(1))
      const pull = yield* Stream.toPull(paced(bytes, PACE, (cut) => Deferred.succeed(told, cut)))
      expect(Chunk.size(yield* pull)).toBe(1)
      // the reader holds the first chunk: 2,000 bytes of credit, then a window behind
      yield* TestClock.adjust(Duration.seconds(11))
      expect(yield* Deferred.isDone(told)).toBe(false)
      yield* TestClock.adjust(Duration.seconds(12))
      const cut = yield* Deferred.await(told)
      expect(cut.behindBytes).toBeGreaterThan(10_000)
      expect(yield* Effect.exit(pull)).toEqual(Exit.fail(Option.some(cut)))
    }).pipe(Effect.scoped)
  )

  it("names what it cut", () => {
    expect(new ReaderTooSlow({ behindBytes: 12_345, minBytesPerSecond: 1_000 }).message).toBe(
      "the reader fell 12345 bytes behind the slowest pace allowed (1000 bytes a second)"
    )
  })
})
