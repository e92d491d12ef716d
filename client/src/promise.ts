import { FetchHttpClient, HttpClient, type HttpClientResponse } from "@effect/platform"
import { Cause, Effect, Exit, FiberRef, Layer, Option, Redacted } from "effect"
import { FacetApi, type FacetApiClient, makeFacetClient } from "./index.js"
import { IDEMPOTENCY_KEY_HEADER, keyedEndpointNamesOf, type RetryPolicy } from "./retry-policy.js"

/**
 * `@facet-pay/client/promise`: the same client for code that does not use Effect. Every endpoint of the Effect
 * client, as a function returning a Promise, typed from it (the mapped types below; nothing is written per
 * endpoint), sent by the same retry policy:
 *
 * ```ts
 * const facet = createFacetClient({ baseUrl: process.env.FACET_API_BASE_URL, apiKey: process.env.FACET_API_KEY })
 * const order = await facet.orders.create({ payload: { amount: "12.5", out_trade_no: "INV-1" } })
 * const again = await facet.orders.get({ path: { order_id: order.order_id } })
 * ```
 *
 * A refusal is thrown as `FacetApiError` (`status`, `error`: the service's message, `body`: the answer as
 * sent); a call that got no answer, or whose request its schema refuses before sending, as `FacetClientError`.
 * Both carry the call's `idempotencyKey` on the endpoints that take one (yours, or the one made for the call):
 * a write whose retries ran out may still have been done, so send it again with **that** key, never a new one.
 * For money-out writes (withdrawals, withdrawal batches, refunds) pass your own key (your payout or refund
 * reference), stored before the call: then even a restart of your process cannot make it a second payout.
 */

/** The service answered with an error: `{error}` with the contract's status (CONTRACT.md section 7). */
export class FacetApiError extends Error {
  override readonly name = "FacetApiError"
  constructor(
    /** The HTTP status: branch on it (the message is operator-facing text, not a stable code). */
    readonly status: number,
    /** The service's message (`error` of the body). */
    readonly error: string,
    /** The whole body as the service sent it (a batch refusal carries `items` beside `error`). */
    readonly body: unknown,
    /**
     * The X-Service-Idempotency-Key the call sent (yours, or the one made for it), on the endpoints that take
     * one. After a 503 or 429 the write may or may not have been done: retry it with this key.
     */
    readonly idempotencyKey: string | undefined = undefined
  ) {
    super(`Facet API ${status}: ${error}`)
  }
}

/** No answer (transport), or a request its schema refuses before anything is sent. */
export class FacetClientError extends Error {
  override readonly name = "FacetClientError"
  constructor(
    readonly reason: "transport" | "request" | "response",
    message: string,
    override readonly cause: unknown,
    /**
     * The X-Service-Idempotency-Key of the call (yours, or the one made for it), on the endpoints that take
     * one. After `transport` (no answer) the write may have been done: retry it with this key, never a new one.
     */
    readonly idempotencyKey: string | undefined = undefined
  ) {
    super(message)
  }
}

// ---- the types: every group and endpoint of the Effect client, Promise-returning

/** What `withResponse: true` makes a call return; the facade never asks for it. */
type WithResponse = readonly [unknown, HttpClientResponse.HttpClientResponse]

/** The request without `withResponse`, its headers optional (the idempotency key is generated when absent). */
type PromiseRequest<R> = Omit<R, "withResponse" | "headers"> &
  (R extends { readonly headers: infer H } ? { readonly headers?: H } : unknown)

/** Only the object members of a request type (an endpoint without parameters also takes no argument at all). */
type Defined<R> = R extends object ? R : never

type PromiseArgs<R> = undefined extends R ? [request?: PromiseRequest<Defined<R>>] : [request: PromiseRequest<R>]

export type PromiseMethod<M> = M extends (request: infer R) => Effect.Effect<infer A, infer _E, infer _R>
  ? (...args: PromiseArgs<R>) => Promise<Exclude<A, WithResponse>>
  : never

export type PromiseGroup<G> = { readonly [E in keyof G]: PromiseMethod<G[E]> }

/** The whole API: `facet.orders.create(...)`, `facet.withdrawals.list(...)`, … */
export type FacetPromiseClient = { readonly [G in keyof FacetApiClient]: PromiseGroup<FacetApiClient[G]> }

export interface CreateFacetClientOptions {
  /** The service's base URL, the `FACET_API_BASE_URL` of onboarding. */
  readonly baseUrl: string | URL
  /** The merchant's API key (`FACET_API_KEY`): backend only. */
  readonly apiKey: string
  /** The `fetch` to send with (default: the global one). */
  readonly fetch?: typeof globalThis.fetch
  /** Overrides of the retry policy. */
  readonly retry?: Partial<RetryPolicy>
}

// ---- the runtime: the Effect client walked once, each method wrapped

/** The answer the call ended with (after its retries), to give a refusal its status and body. */
const finalAnswer = FiberRef.unsafeMake(Option.none<HttpClientResponse.HttpClientResponse>())

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> => typeof u === "object" && u !== null

/** A method of the Effect client gives an Effect that needs nothing (`HttpApiClient.make` closes over its client). */
const isSelfContained = (u: unknown): u is Effect.Effect<unknown, unknown, never> => Effect.isEffect(u)

const bodyOf = (response: HttpClientResponse.HttpClientResponse) =>
  response.arrayBuffer.pipe(
    Effect.map((bytes) => {
      const text = new TextDecoder().decode(bytes)
      try {
        const parsed: unknown = JSON.parse(text)
        return parsed
      } catch {
        return text
      }
    }),
    Effect.orElseSucceed((): unknown => undefined)
  )

const errorMessageOf = (body: unknown, fallback: string) =>
  isRecord(body) && typeof body.error === "string" ? body.error : fallback

/** What a failed call that sent `key` throws. */
const thrown = (cause: Cause.Cause<unknown>, key: string | undefined) =>
  Effect.gen(function* () {
    const failure = Cause.failureOption(cause)
    const error = Option.getOrUndefined(failure)
    const answer = yield* FiberRef.get(finalAnswer)
    const tag = isRecord(error) && typeof error._tag === "string" ? error._tag : undefined
    if (tag === "RequestError") {
      const reason = isRecord(error) && error.reason === "Transport" ? "transport" : "request"
      return new FacetClientError(reason, String(error), error, key)
    }
    if (tag === "ParseError" && Option.isNone(answer)) {
      return new FacetClientError("request", `the request does not match its schema: ${String(error)}`, error, key)
    }
    if (Option.isSome(answer) && (answer.value.status < 200 || answer.value.status >= 300)) {
      const body = yield* bodyOf(answer.value)
      return new FacetApiError(answer.value.status, errorMessageOf(body, `HTTP ${answer.value.status}`), body, key)
    }
    if (Option.isSome(failure))
      return new FacetClientError("response", `unexpected answer: ${String(error)}`, error, key)
    return new FacetClientError("response", Cause.pretty(cause), Cause.squash(cause), key)
  })

const run = (effect: Effect.Effect<unknown, unknown, never>, key: string | undefined): Promise<unknown> =>
  Effect.runPromiseExit(
    effect.pipe(Effect.catchAllCause((cause) => Effect.flatMap(thrown(cause, key), Effect.fail)))
  ).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    throw Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
  })

/** The endpoints that take X-Service-Idempotency-Key, as `group.endpoint`. */
const keyedNames = keyedEndpointNamesOf(FacetApi)

/**
 * The headers a call sends, and its idempotency key: the caller's, or, on an endpoint that takes one, a new
 * one made here, before the call, so that whatever the call ends with can say which key it sent.
 */
const keyedHeaders = (endpoint: string, given: unknown) => {
  const headers = isRecord(given) ? given : {}
  const own = headers[IDEMPOTENCY_KEY_HEADER]
  const key = typeof own === "string" ? own : keyedNames.has(endpoint) ? crypto.randomUUID() : undefined
  return { headers: key === undefined ? headers : { ...headers, [IDEMPOTENCY_KEY_HEADER]: key }, key }
}

/** Every group and endpoint of `client`, each a function of the request giving a Promise. */
const promiseMethods = (client: unknown) => {
  const groups: Record<string, Record<string, (request?: unknown) => Promise<unknown>>> = {}
  if (!isRecord(client)) return groups
  for (const [groupName, group] of Object.entries(client)) {
    if (!isRecord(group)) continue
    const methods: Record<string, (request?: unknown) => Promise<unknown>> = {}
    for (const [name, method] of Object.entries(group)) {
      if (typeof method !== "function") continue
      methods[name] = (request) => {
        // headers default to none; the endpoints that take an idempotency key get one made for the call
        const given = isRecord(request) ? request : {}
        const { headers, key } = keyedHeaders(`${groupName}.${name}`, given.headers)
        const effect: unknown = Reflect.apply(method, group, [{ ...given, headers }])
        return isSelfContained(effect)
          ? run(effect, key)
          : Promise.reject(new FacetClientError("request", `${groupName}.${name} did not give an Effect`, effect, key))
      }
    }
    groups[groupName] = methods
  }
  return groups
}

/** The walk found every group and endpoint of the Effect client (checked at runtime; the types follow from it). */
const isPromiseClientOf =
  (client: FacetApiClient) =>
  (u: unknown): u is FacetPromiseClient =>
    isRecord(u) &&
    Object.entries(client).every(([groupName, group]) => {
      const methods = u[groupName]
      return isRecord(methods) && Object.keys(group).every((name) => typeof methods[name] === "function")
    })

/** The Facet API as Promise-returning functions, on `fetch`. */
export const createFacetClient = (options: CreateFacetClientOptions): FacetPromiseClient => {
  const fetchLayer = FetchHttpClient.layer.pipe(
    Layer.provide(Layer.succeed(FetchHttpClient.Fetch, options.fetch ?? globalThis.fetch))
  )
  const client = Effect.runSync(
    Effect.gen(function* () {
      const base = yield* HttpClient.HttpClient
      // every attempt's answer is noted; the last one noted is the one the call ended with
      const noting = HttpClient.tapRequest(base, () => FiberRef.set(finalAnswer, Option.none())).pipe(
        HttpClient.transformResponse(Effect.tap((response) => FiberRef.set(finalAnswer, Option.some(response))))
      )
      return yield* makeFacetClient({
        baseUrl: options.baseUrl,
        apiKey: Redacted.make(options.apiKey),
        ...(options.retry === undefined ? {} : { retry: options.retry })
      }).pipe(Effect.provideService(HttpClient.HttpClient, noting))
    }).pipe(Effect.provide(fetchLayer))
  )
  const facade = promiseMethods(client)
  if (!isPromiseClientOf(client)(facade)) throw new Error("@facet-pay/client: the Promise client is missing endpoints")
  return facade
}
