import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import { IdempotencyKeyReused } from "./idempotency-errors.js"
import { IdempotencyStore } from "./stores/idempotency-store.js"

/** JSON with object keys sorted, so equal requests hash equally whatever their key order. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

export const requestHash = (normalizedRequest: unknown): string =>
  createHash("sha256").update(canonicalJson(normalizedRequest)).digest("hex")

export interface IdempotentReplay {
  readonly resourceId: string
  readonly statusCode: number
}

/**
 * X-Service-Idempotency-Key, scoped to merchant and endpoint. `claim` runs inside the creating
 * transaction: the first request inserts the key and goes on; a concurrent one with the same key waits on
 * the unique index until the first commits, then replays its result (same request) or gets 409.
 */
export class Idempotency extends Effect.Service<Idempotency>()("facet/Idempotency", {
  dependencies: [IdempotencyStore.Default],
  effect: Effect.gen(function* () {
    const store = yield* IdempotencyStore
    const claim = Effect.fn("Idempotency.claim")(function* (args: {
      readonly merchantId: string
      readonly endpoint: string
      readonly key: string
      readonly requestHash: string
      readonly resourceId: string
      readonly statusCode: number
    }) {
      if (yield* store.insertIfAbsent(args)) return Option.none<IdempotentReplay>()
      const existing = yield* store.find(args.merchantId, args.endpoint, args.key)
      if (Option.isNone(existing)) return yield* Effect.die(new Error("idempotency key vanished after a conflict"))
      const row = existing.value
      if (row.request_hash !== args.requestHash) {
        return yield* new IdempotencyKeyReused({ endpoint: args.endpoint })
      }
      return Option.some<IdempotentReplay>({ resourceId: row.resource_id, statusCode: row.status_code })
    })
    /**
     * What an earlier request with this key answered, read before any work (a batch's replay needs no
     * quoting); the same key with another request is 409. `claim` in the creating transaction still decides
     * between concurrent first requests.
     */
    const lookup = Effect.fn("Idempotency.lookup")(function* (args: {
      readonly merchantId: string
      readonly endpoint: string
      readonly key: string
      readonly requestHash: string
    }) {
      const existing = yield* Effect.orDie(store.find(args.merchantId, args.endpoint, args.key))
      if (Option.isNone(existing)) return Option.none<IdempotentReplay>()
      if (existing.value.request_hash !== args.requestHash)
        return yield* new IdempotencyKeyReused({ endpoint: args.endpoint })
      return Option.some<IdempotentReplay>({
        resourceId: existing.value.resource_id,
        statusCode: existing.value.status_code
      })
    })
    return { claim, lookup } as const
  })
}) {}
