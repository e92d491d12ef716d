import { FetchHttpClient, HttpApi, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Effect, Layer, Option, type Redacted, Redacted as RedactedModule, SchemaAST } from "effect"
import { FacetApi } from "../../http/api.js"
import {
  defaultRetryPolicy,
  keyedEndpointsOf,
  type RetryPolicy,
  withIdempotencyKeys,
  withRetries
} from "./retry-policy.js"

/**
 * `@facet-pay/client`: the Facet `/v1` API as a typed Effect client, made by `HttpApiClient` from the very
 * declaration the service serves (`http/api.ts`): every endpoint, its path, query, headers, body, answers and
 * errors typed by construction. Errors are the API's own (`BadRequest`, `Conflict`, `ServiceUnavailable`, …:
 * `{error}` with the contract's status), beside `HttpClientError` (no answer) and `ParseError` (a request that
 * its schema refuses, checked before it is sent).
 *
 * ```ts
 * const program = Effect.gen(function* () {
 *   const facet = yield* FacetClient
 *   const order = yield* facet.orders.create({ payload: { amount: "12.5" }, headers: {} })
 *   return yield* facet.orders.get({ path: { order_id: order.order_id } })
 * })
 * program.pipe(Effect.provide(FacetClient.layerFetch({ baseUrl, apiKey: Redacted.make(key) })))
 * ```
 *
 * Requests are sent by the retry policy of `./retry-policy.ts` (reads on 503 and transport errors, writes only
 * with their idempotency key — generated per call when you give none —, 429 after Retry-After). A key generated
 * for a call is not handed back (the API's typed errors have no room for it; only a transport error's
 * `request.headers` shows it): pass your own `x-service-idempotency-key` on every write you may send again,
 * and always on money-out writes (withdrawals, withdrawal batches, refunds), so that your retry after the
 * retries ran out is the same write and not a second one. Redirects are never followed (`withoutRedirects`).
 */

export { FacetApi } from "../../http/api.js"
export * from "../../src/domain/errors.js"
export { defaultRetryPolicy, type RetryPolicy, IDEMPOTENCY_KEY_HEADER } from "./retry-policy.js"
// the resources' types, for your own signatures (each is the `Type` of the schema the API declares)
export type { DepositAddress } from "../../src/domain/deposit-address.js"
export type { CreateOrderRequest, Order, OrderStatus } from "../../src/domain/order.js"
export type { PaymentLink } from "../../src/domain/payment-link.js"
export type { Refund, RefundStatus } from "../../src/domain/refund.js"
export type { Transaction } from "../../src/domain/transaction.js"
export type { WalletPortfolio } from "../../src/domain/wallet-portfolio.js"
export type { CreateWithdrawalRequest, FeeQuote, Withdrawal, WithdrawalStatus } from "../../src/domain/withdrawal.js"
export type { WithdrawalBatch } from "../../src/domain/withdrawal-batch.js"

export interface FacetClientOptions {
  /** The service's base URL, the `FACET_API_BASE_URL` of onboarding (e.g. `https://pay.example.com`). */
  readonly baseUrl: string | URL
  /** The merchant's API key (`FACET_API_KEY`): backend only, never in a browser. */
  readonly apiKey: Redacted.Redacted<string>
  /** Overrides of the retry policy (`defaultRetryPolicy`). */
  readonly retry?: Partial<RetryPolicy>
}

/**
 * A fetch-based client never follows a redirect: a 3xx is the answer (an error of the call). Following one
 * would send the request, `X-API-Key` and all, wherever its `Location` points. Every request is sent with
 * fetch's `RequestInit` `redirect: "manual"`, merged over a `FetchHttpClient.RequestInit` of the calling
 * context (a dispatcher or proxy there is kept). Other `HttpClient`s ignore it; `@effect/platform-node`'s
 * (Node's `http`, undici's `request`) do not follow redirects in the first place.
 */
export const withoutRedirects = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transformResponse(client, (response) =>
    Effect.flatMap(Effect.serviceOption(FetchHttpClient.RequestInit), (init) =>
      Effect.provideService(response, FetchHttpClient.RequestInit, {
        ...Option.getOrUndefined(init),
        redirect: "manual"
      })
    )
  )

/** The typed client of the whole API, built on the `HttpClient` in context. */
export const makeFacetClient = (options: FacetClientOptions) => {
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...options.retry }
  const keyed = keyedEndpointsOf(FacetApi)
  return HttpApiClient.make(FacetApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) =>
      client.pipe(
        withoutRedirects,
        withRetries(policy),
        // request preprocessing runs once per call, before the retries: one key for every attempt
        withIdempotencyKeys(keyed),
        HttpClient.mapRequest(HttpClientRequest.setHeader("x-api-key", RedactedModule.value(options.apiKey)))
      )
  })
}

/** Every group and endpoint of the API as Effect-returning methods: `client.orders.create(...)`. */
export type FacetApiClient = Effect.Effect.Success<ReturnType<typeof makeFacetClient>>

/** The Facet client as a service. */
export class FacetClient extends Context.Tag("@facet-pay/client/FacetClient")<FacetClient, FacetApiClient>() {
  /** On the `HttpClient` you provide (Node's, fetch, with your own tracing or proxy). */
  static readonly layer = (options: FacetClientOptions): Layer.Layer<FacetClient, never, HttpClient.HttpClient> =>
    Layer.effect(FacetClient, makeFacetClient(options))

  /** On the platform's `fetch`. */
  static readonly layerFetch = (options: FacetClientOptions): Layer.Layer<FacetClient> =>
    Layer.provide(FacetClient.layer(options), FetchHttpClient.layer)
}

/** The HTTP status of each of the API's errors, by its tag, from the declaration. */
const statusByTag = (() => {
  const statuses = new Map<string, number>()
  HttpApi.reflect(FacetApi, {
    onGroup: () => {},
    onEndpoint: ({ errors }) => {
      errors.forEach(({ ast }, status) => {
        if (Option.isNone(ast)) return
        const members = SchemaAST.isUnion(ast.value) ? ast.value.types : [ast.value]
        for (const member of members) {
          const tag = SchemaAST.getIdentifierAnnotation(member)
          if (Option.isSome(tag)) statuses.set(tag.value, status)
        }
      })
    }
  })
  return statuses
})()

/** The contract's HTTP status of an API error (`NotFound` → 404, `Conflict` → 409, …); undefined for others. */
export const statusOf = (error: { readonly _tag: string }): number | undefined => statusByTag.get(error._tag)
