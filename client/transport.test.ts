import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import { FacetClient, type RetryPolicy } from "./src/index.js"
import { createFacetClient, FacetApiError, FacetClientError } from "./src/promise.js"
import { type ProxyAction, startFaultProxy, unavailable } from "./test/fault-proxy.js"

/**
 * The client against tiny local servers that script every answer (the fault proxy, never passing anything
 * on): which idempotency key a failed write reports, and what a redirect does.
 */

const FAST: Partial<RetryPolicy> = { baseDelay: "10 millis", maxDelay: "20 millis", maxAttempts: 3 }
const API_KEY = "fk_live_secret_of_the_merchant"
const NOWHERE = "http://127.0.0.1:9"

/** A server that answers every request with `action`, keeping what it saw. */
const scriptedServer = (action: ProxyAction) => startFaultProxy(NOWHERE, () => action)

const rejection = (promise: Promise<unknown>) =>
  Effect.promise(() =>
    promise.then(
      (value) => Either.right(value),
      (error: unknown) => Either.left(error)
    )
  )

const withdrawal = { chain: "TRC20", currency: "USDT", amount: "50", to_address: "TXYZ" } as const

describe("a failed write tells which idempotency key it sent", () => {
  it.scoped(
    "the Promise facade: the last 503 and a lost answer carry the call's key (made for it, or yours); a read none",
    () =>
      Effect.gen(function* () {
        const down = yield* scriptedServer(unavailable("answer"))
        const facet = createFacetClient({ baseUrl: down.url, apiKey: API_KEY, retry: FAST })
        // no key given: the one made for the call is sent on every attempt and reported with the refusal
        const refused = yield* rejection(facet.orders.create({ payload: { amount: "5" } }))
        expect(Either.isLeft(refused) && refused.left).toBeInstanceOf(FacetApiError)
        const sent = down.seen.map((r) => r.headers["x-service-idempotency-key"])
        expect(sent).toHaveLength(3)
        expect(new Set(sent).size).toBe(1)
        expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/)
        expect(Either.isLeft(refused) && refused.left).toMatchObject({ status: 503, idempotencyKey: sent[0] })
        // the caller's retry with that key is the same write to the service, not a second one
        const again = yield* rejection(
          facet.orders.create({
            payload: { amount: "5" },
            headers: { "x-service-idempotency-key": String(sent[0]) }
          })
        )
        expect(Either.isLeft(again) && again.left).toMatchObject({ status: 503, idempotencyKey: sent[0] })
        expect(new Set(down.seen.map((r) => r.headers["x-service-idempotency-key"])).size).toBe(1)
        // a read takes no key
        const read = yield* rejection(facet.orders.get({ path: { order_id: "ord_1" } }))
        expect(Either.isLeft(read) && read.left).toMatchObject({ status: 503, idempotencyKey: undefined })

        // no answer at all (the connection dropped): your own key, on the transport error
        const gone = yield* scriptedServer({ _tag: "hangUp" })
        const payout = yield* rejection(
          createFacetClient({ baseUrl: gone.url, apiKey: API_KEY, retry: FAST }).withdrawals.create({
            payload: withdrawal,
            headers: { "x-service-idempotency-key": "PAYOUT-77" }
          })
        )
        expect(Either.isLeft(payout) && payout.left).toBeInstanceOf(FacetClientError)
        expect(Either.isLeft(payout) && payout.left).toMatchObject({ reason: "transport", idempotencyKey: "PAYOUT-77" })
        expect(gone.seen.map((r) => r.headers["x-service-idempotency-key"])).toEqual([
          "PAYOUT-77",
          "PAYOUT-77",
          "PAYOUT-77"
        ])
      }),
    30_000
  )
})

describe("redirects are answers, never followed with the API key", () => {
  it.scoped(
    "a 307 to another origin: the facade and the Effect client stop there; the other server sees nothing",
    () =>
      Effect.gen(function* () {
        const elsewhere = yield* scriptedServer({
          _tag: "answer",
          status: 200,
          headers: { "content-type": "application/json" },
          body: "{}"
        })
        const redirecting = yield* startFaultProxy(NOWHERE, (_n, request) => ({
          _tag: "answer",
          status: 307,
          headers: { location: `${elsewhere.url}${request.path}` },
          body: ""
        }))
        // the hazard: fetch's default follows, and takes X-API-Key to the other origin
        yield* Effect.promise(() =>
          fetch(`${redirecting.url}/v1/orders/ord_1`, { headers: { "x-api-key": API_KEY } }).then((r) => r.text())
        )
        expect(elsewhere.seen.map((r) => r.headers["x-api-key"])).toEqual([API_KEY])
        elsewhere.seen.length = 0
        redirecting.seen.length = 0

        const facet = createFacetClient({ baseUrl: redirecting.url, apiKey: API_KEY, retry: FAST })
        const read = yield* rejection(facet.orders.get({ path: { order_id: "ord_1" } }))
        expect(Either.isLeft(read) && read.left).toBeInstanceOf(FacetApiError)
        expect(Either.isLeft(read) && read.left).toMatchObject({ status: 307 })
        const write = yield* rejection(facet.withdrawals.create({ payload: withdrawal }))
        expect(Either.isLeft(write) && write.left).toMatchObject({ status: 307 })

        const viaEffect = yield* Effect.flip(
          Effect.flatMap(FacetClient, (client) => client.orders.get({ path: { order_id: "ord_1" } })).pipe(
            Effect.provide(FacetClient.layerFetch({ baseUrl: redirecting.url, apiKey: Redacted.make(API_KEY) }))
          )
        )
        expect(viaEffect._tag).toBe("ResponseError")
        expect(viaEffect).toMatchObject({ response: { status: 307 } })

        // each request reached the first server once (a 3xx is no reason to retry), and never the second
        expect(redirecting.seen.map((r) => [r.method, r.headers["x-api-key"]])).toEqual([
          ["GET", API_KEY],
          ["POST", API_KEY],
          ["GET", API_KEY]
        ])
        expect(elsewhere.seen).toEqual([])
      }),
    30_000
  )
})
