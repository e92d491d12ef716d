import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import { TestAppLive, TestClient } from "../test/http-harness.js"
import { asRecord } from "../test/json.js"
import { onboardMerchant } from "../test/merchants.js"
import { FacetClient, type RetryPolicy, statusOf } from "./src/index.js"
import { createFacetClient, FacetApiError, FacetClientError } from "./src/promise.js"
import { forward, type ProxyAction, type SeenRequest, startFaultProxy, unavailable } from "./test/fault-proxy.js"

/** The default policy's bounds with short waits, so the bound is reached in well under a second. */
const FAST: Partial<RetryPolicy> = { baseDelay: "20 millis", maxDelay: "100 millis" }

const effectClient = (baseUrl: string, apiKey: string, retry: Partial<RetryPolicy> = FAST) =>
  FacetClient.layerFetch({ baseUrl, apiKey: Redacted.make(apiKey), retry })

/** The first request matching `method` and `path` gets `first`, every other one is passed on. */
const firstOnly = (method: string, path: RegExp, first: ProxyAction) => {
  let matched = 0
  return (_n: number, request: SeenRequest): ProxyAction => {
    if (request.method !== method || !path.test(request.path)) return forward
    matched += 1
    return matched === 1 ? first : forward
  }
}

const rejection = (promise: Promise<unknown>) =>
  Effect.promise(() =>
    promise.then(
      (value) => Either.right(value),
      (error: unknown) => Either.left(error)
    )
  )

describe("@facet-pay/client against the running service", () => {
  layer(TestAppLive(), { excludeTestServices: true })((it) => {
    it.effect(
      "creates, reads and lists orders through the Effect client and the Promise facade",
      () =>
        Effect.gen(function* () {
          const service = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const viaEffect = yield* Effect.gen(function* () {
            const facet = yield* FacetClient
            const created = yield* facet.orders.create({
              payload: { amount: "12.5", out_trade_no: "E-1" },
              headers: {}
            })
            const read = yield* facet.orders.get({ path: { order_id: created.order_id } })
            const listed = yield* facet.orders.list({ urlParams: { page: 1, size: 20 } })
            // an API error is the API's typed error: {error} with the contract's status
            const missing = yield* Effect.flip(facet.orders.get({ path: { order_id: "ord_missing" } }))
            return { created, read, listed, missing }
          }).pipe(Effect.provide(effectClient(service.url, apiKey)))
          expect(viaEffect.created).toMatchObject({ status: "PENDING", amount: "12.5", out_trade_no: "E-1" })
          expect(viaEffect.read.order_id).toBe(viaEffect.created.order_id)
          expect(viaEffect.listed.items.map((o) => o.order_id)).toEqual([viaEffect.created.order_id])
          expect(viaEffect.missing._tag).toBe("NotFound")
          expect(statusOf(viaEffect.missing)).toBe(404)
          expect([
            statusOf({ _tag: "Conflict" }),
            statusOf({ _tag: "BatchInvalid" }),
            statusOf({ _tag: "RateLimited" })
          ]).toEqual([409, 400, 429])

          const facet = createFacetClient({ baseUrl: service.url, apiKey, retry: FAST })
          const created = yield* Effect.promise(() =>
            facet.orders.create({ payload: { amount: "7", out_trade_no: "P-1" } })
          )
          const read = yield* Effect.promise(() => facet.orders.get({ path: { order_id: created.order_id } }))
          const listed = yield* Effect.promise(() => facet.orders.list({ urlParams: { page: 1, size: 20 } }))
          expect(read).toMatchObject({ order_id: created.order_id, amount: "7", out_trade_no: "P-1" })
          expect(listed.total).toBe(2)
          // endpoints without parameters take no argument
          expect((yield* Effect.promise(() => facet.walletAssets.policies())).items.length).toBeGreaterThan(0)

          // refusals are thrown as FacetApiError with the status, the message and the body as sent
          const missing = yield* rejection(facet.orders.get({ path: { order_id: "ord_missing" } }))
          expect(Either.isLeft(missing) && missing.left).toBeInstanceOf(FacetApiError)
          expect(Either.isLeft(missing) && missing.left).toMatchObject({
            status: 404,
            body: { error: expect.any(String) }
          })
          yield* Effect.promise(() =>
            facet.orders.create({ payload: { amount: "1" }, headers: { "x-service-idempotency-key": "inv-9" } })
          )
          const reused = yield* rejection(
            facet.orders.create({ payload: { amount: "2" }, headers: { "x-service-idempotency-key": "inv-9" } })
          )
          expect(Either.isLeft(reused) && reused.left).toMatchObject({
            status: 409,
            error: expect.stringMatching(/key/)
          })
          const wrongKey = createFacetClient({ baseUrl: service.url, apiKey: "fk_live_wrong" })
          expect(yield* rejection(wrongKey.orders.list({ urlParams: { page: 1, size: 1 } }))).toMatchObject({
            left: { status: 401 }
          })
          // a request its schema refuses is never sent
          const invalid = yield* rejection(facet.orders.create({ payload: { amount: "-1" } }))
          expect(Either.isLeft(invalid) && invalid.left).toBeInstanceOf(FacetClientError)
          expect(Either.isLeft(invalid) && invalid.left).toMatchObject({ reason: "request" })
        }),
      60_000
    )

    it.scoped(
      "a create whose answer was lost (503 after the service did it) is sent again with the same key: one order",
      () =>
        Effect.gen(function* () {
          const service = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const proxy = yield* startFaultProxy(
            service.url,
            firstOnly("POST", /^\/v1\/orders$/, unavailable("forwardThenAnswer"))
          )
          // the Effect client, no key given: one is generated for the call
          const order = yield* Effect.flatMap(FacetClient, (facet) =>
            facet.orders.create({ payload: { amount: "30" }, headers: {} })
          ).pipe(Effect.provide(effectClient(proxy.url, apiKey)))
          const posts = proxy.seen.filter((r) => r.method === "POST")
          expect(posts).toHaveLength(2)
          const keys = posts.map((r) => r.headers["x-service-idempotency-key"])
          expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
          expect(keys[1]).toBe(keys[0])
          // the answer the client never saw and the one it got are the same order
          const lost = asRecord(JSON.parse(proxy.answers[0]?.body ?? "{}"))
          expect(proxy.answers[0]?.status).toBe(201)
          expect(order.order_id).toBe(lost.order_id)
          expect(order.pay_address).toBe(lost.pay_address)
          const listed = yield* service.request("GET", "/v1/orders", { apiKey })
          expect(asRecord(listed.body).total).toBe(1)

          // the facade, the caller's own key: reused on the retry
          const facet = createFacetClient({ baseUrl: proxy.url, apiKey, retry: FAST })
          const again = yield* startFaultProxy(
            service.url,
            firstOnly("POST", /^\/v1\/orders$/, unavailable("forwardThenAnswer"))
          )
          const viaFacade = createFacetClient({ baseUrl: again.url, apiKey, retry: FAST })
          const second = yield* Effect.promise(() =>
            viaFacade.orders.create({ payload: { amount: "31" }, headers: { "x-service-idempotency-key": "INV-31" } })
          )
          expect(again.seen.map((r) => r.headers["x-service-idempotency-key"])).toEqual(["INV-31", "INV-31"])
          expect(second.order_id).toBe(asRecord(JSON.parse(again.answers[0]?.body ?? "{}")).order_id)
          expect((yield* Effect.promise(() => facet.orders.list({ urlParams: { page: 1, size: 20 } }))).total).toBe(2)
        }),
      60_000
    )

    it.scoped(
      "a write without an idempotency key is not sent again after a 503; a read is",
      () =>
        Effect.gen(function* () {
          const service = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const proxy = yield* startFaultProxy(service.url, (_n, request) =>
            request.method === "POST" ? unavailable("forwardThenAnswer") : forward
          )
          // enrollment takes no key: the 503 is the answer (the service may have done it; reconcile by reading)
          const facet = createFacetClient({ baseUrl: proxy.url, apiKey, retry: FAST })
          const refused = yield* rejection(
            facet.walletAssets.enroll({ payload: { chain: "BEP20", currency: "USDT", source: "merchant_api" } })
          )
          expect(Either.isLeft(refused) && refused.left).toMatchObject({
            status: 503,
            body: { error: expect.any(String) }
          })
          expect(proxy.seen.filter((r) => r.method === "POST")).toHaveLength(1)

          // a read answered 503 once, then dropped once (no answer at all), is sent until it is answered
          const created = yield* service.request("POST", "/v1/orders", { apiKey, json: { amount: "4" } })
          const orderId = String(asRecord(created.body).order_id)
          let reads = 0
          const flaky = yield* startFaultProxy(service.url, () => {
            reads += 1
            return reads === 1 ? unavailable("answer") : reads === 2 ? { _tag: "hangUp" } : forward
          })
          const read = yield* Effect.flatMap(FacetClient, (client) =>
            client.orders.get({ path: { order_id: orderId } })
          ).pipe(Effect.provide(effectClient(flaky.url, apiKey)))
          expect(read.order_id).toBe(orderId)
          expect(flaky.seen).toHaveLength(3)
        }),
      60_000
    )

    it.scoped(
      "a 429 waits for its Retry-After, even for a write without a key (the limiter answered before any work)",
      () =>
        Effect.gen(function* () {
          const service = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const proxy = yield* startFaultProxy(
            service.url,
            firstOnly("POST", /^\/v1\/wallet-asset-enrollments$/, {
              _tag: "answer",
              status: 429,
              headers: { "content-type": "application/json", "retry-after": "1" },
              body: JSON.stringify({ error: "rate limit exceeded; retry after 1 s" })
            })
          )
          const facet = createFacetClient({ baseUrl: proxy.url, apiKey, retry: FAST })
          const started = Date.now()
          const enrolled = yield* Effect.promise(() =>
            facet.walletAssets.enroll({ payload: { chain: "BEP20", currency: "USDT", source: "merchant_api" } })
          )
          const waited = Date.now() - started
          expect(enrolled).toMatchObject({ chain: "BEP20", currency: "USDT", merchant_enabled: true })
          expect(waited).toBeGreaterThanOrEqual(950)
          expect(proxy.seen.filter((r) => r.method === "POST")).toHaveLength(2)
        }),
      60_000
    )

    it.scoped(
      "retries are bounded: a service that always answers 503 gives the 503 after four attempts",
      () =>
        Effect.gen(function* () {
          const service = yield* TestClient
          const { apiKey } = yield* onboardMerchant()
          const proxy = yield* startFaultProxy(service.url, () => unavailable("answer"))
          const error = yield* Effect.flip(
            Effect.flatMap(FacetClient, (facet) => facet.orders.list({ urlParams: { page: 1, size: 20 } })).pipe(
              Effect.provide(effectClient(proxy.url, apiKey))
            )
          )
          expect(error._tag).toBe("ServiceUnavailable")
          expect(proxy.seen).toHaveLength(4)

          // the keyed write too, every attempt with its one key; and the facade throws the last answer
          const facet = createFacetClient({ baseUrl: proxy.url, apiKey, retry: { ...FAST, maxAttempts: 3 } })
          const refused = yield* rejection(facet.orders.create({ payload: { amount: "5" } }))
          expect(Either.isLeft(refused) && refused.left).toMatchObject({ status: 503 })
          const posts = proxy.seen.filter((r) => r.method === "POST")
          expect(posts).toHaveLength(3)
          expect(new Set(posts.map((r) => r.headers["x-service-idempotency-key"])).size).toBe(1)

          // and the deadline: a Retry-After beyond it is not waited for
          const slow = yield* startFaultProxy(service.url, () => ({
            _tag: "answer",
            status: 429,
            headers: { "retry-after": "30" },
            body: JSON.stringify({ error: "rate limit exceeded; retry after 30 s" })
          }))
          const started = Date.now()
          const limited = yield* rejection(
            createFacetClient({ baseUrl: slow.url, apiKey, retry: { deadline: "2 seconds" } }).orders.list({
              urlParams: { page: 1, size: 1 }
            })
          )
          expect(Either.isLeft(limited) && limited.left).toMatchObject({ status: 429 })
          expect(Date.now() - started).toBeLessThan(1_500)
          expect(slow.seen).toHaveLength(1)
        }),
      60_000
    )
  })
})
