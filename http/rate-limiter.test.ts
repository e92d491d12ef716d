import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestDatabaseLive } from "../test/database.js"
import { makeRateLimiter } from "./rate-limiter.js"

describe("rate limits shared by every process", () => {
  layer(TestDatabaseLive, { excludeTestServices: true })((it) => {
    it.effect(
      "two processes' limiters draw from one bucket per key: burst 5 in all, then a wait; another key is untouched",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          // two limiters over one database stand for two service processes
          const one = makeRateLimiter(sql, { perSecond: 0.5, burst: 5 })
          const two = makeRateLimiter(sql, { perSecond: 0.5, burst: 5 })
          const answers = yield* Effect.forEach([one, two, one, two, one, two, one, two], (limiter) =>
            limiter.take("key:abc")
          )
          expect(answers.slice(0, 5).every(Option.isNone)).toBe(true)
          expect(answers.slice(5).map((a) => Option.getOrElse(a, () => 0))).toEqual([2, 2, 2])
          expect(Option.isNone(yield* two.take("key:other"))).toBe(true)
          // concurrent takes from both at once never grant more than the burst
          const burst = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? one : two).take("key:race")),
            { concurrency: "unbounded" }
          )
          expect(burst.filter(Option.isNone)).toHaveLength(5)
        })
    )

    it.effect(
      "a namespaced limiter (the refund claim form's) keeps its own slow buckets: the default limiter's pruning leaves them alone",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const fast = makeRateLimiter(sql, { perSecond: 1000, burst: 1 })
          const slow = makeRateLimiter(sql, { perSecond: 0.001, burst: 2, namespace: "claims" })
          expect(Option.isNone(yield* slow.take("addr:1.2.3.4"))).toBe(true)
          expect(Option.isNone(yield* slow.take("addr:1.2.3.4"))).toBe(true)
          expect(Option.isSome(yield* slow.take("addr:1.2.3.4"))).toBe(true)
          // the same key in the default limiter is another bucket
          expect(Option.isNone(yield* fast.take("addr:1.2.3.4"))).toBe(true)
          yield* sql`UPDATE rate_limit_buckets SET updated_at = updated_at - interval '1 minute'`
          yield* fast.prune
          const [left] = yield* sql<{ bucket: string }>`SELECT bucket FROM rate_limit_buckets WHERE bucket LIKE 'ns:%'`
          expect(left?.bucket).toBe("ns:claims:addr:1.2.3.4")
          expect(Option.isSome(yield* slow.take("addr:1.2.3.4"))).toBe(true)
        })
    )
  })
})
