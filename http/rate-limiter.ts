import { Clock, Effect, Option } from "effect"
import { AppConfig } from "../src/config.js"

interface Bucket {
  tokens: number
  updatedAt: number
}

// Idle buckets are full again after burst/perSecond seconds; dropping them then loses nothing.
const MAX_BUCKETS = 100_000

/**
 * Token bucket per API key (per client address for unauthenticated calls), in this process's memory:
 * `burst` requests at once, refilled at `perSecond`.
 */
export class RateLimiter extends Effect.Service<RateLimiter>()("facet/RateLimiter", {
  effect: Effect.gen(function*() {
    const { rateLimit } = yield* AppConfig
    const buckets = new Map<string, Bucket>()

    const prune = (now: number) => {
      const idleMs = (rateLimit.burst / rateLimit.perSecond) * 1000
      for (const [key, bucket] of buckets) {
        if (now - bucket.updatedAt > idleMs) buckets.delete(key)
      }
    }

    /** Takes one token; when none is left, says how many whole seconds until one is. */
    const take = (key: string) =>
      Effect.map(Clock.currentTimeMillis, (now): Option.Option<number> => {
        if (buckets.size >= MAX_BUCKETS) prune(now)
        const bucket = buckets.get(key) ?? { tokens: rateLimit.burst, updatedAt: now }
        bucket.tokens = Math.min(rateLimit.burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * rateLimit.perSecond)
        bucket.updatedAt = now
        buckets.set(key, bucket)
        if (bucket.tokens >= 1) {
          bucket.tokens -= 1
          return Option.none()
        }
        return Option.some(Math.max(1, Math.ceil((1 - bucket.tokens) / rateLimit.perSecond)))
      })

    return { take } as const
  })
}) {}
