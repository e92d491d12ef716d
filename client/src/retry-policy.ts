import {
  type HttpApi,
  type HttpApiGroup,
  HttpApi as HttpApiModule,
  HttpClient,
  HttpClientError,
  type HttpClientRequest,
  HttpClientRequest as Request,
  type HttpClientResponse
} from "@effect/platform"
import { Clock, Duration, Effect, Either, Option, Random, SchemaAST } from "effect"

/**
 * When the client sends a request again: the one retry policy of `@facet-pay/client` (both the Effect client
 * and the Promise facade go through it).
 *
 * - **Reads** (GET, HEAD) are retried on `503` and on transport errors (no answer: connection refused or reset,
 *   an attempt timed out). Reading twice changes nothing.
 * - **Writes with `X-Service-Idempotency-Key`** are retried the same way. The key is what makes it safe: the
 *   service answers a repeat of the same key and body with what the first request created (CONTRACT.md
 *   section 4: "After a timeout the client retries with the exact same key and body"), and a concurrent repeat
 *   waits for the first to commit. Every attempt of one call carries the same key. For the endpoints whose
 *   declaration takes the header (`IdempotencyKeyHeader`: orders, withdrawals, withdrawal batches, refunds,
 *   payment links) a call without a key gets one generated, once per call (a random UUID), before the first
 *   attempt — never a new one on a retry. Pass your own key (your order or payout reference) to make a retry
 *   after *your* process restarts safe too.
 * - **Writes without the key** (a `POST` whose endpoint takes no key) are never retried on `503` or on a
 *   transport error: the service may have done the work and the answer been lost; reconcile (read) first.
 * - **`429`** is retried for every request, writes without a key included: the service answers 429 from its
 *   rate limiter before the request reaches any handler (http/error-boundary.ts), so nothing was done, and the
 *   contract's advice for 429 is "use bounded exponential backoff". `Retry-After` is honoured, in seconds or as
 *   an HTTP date, capped at `maxRetryAfter` (30 s by default); a wait that would pass the deadline is not
 *   started: the 429 is returned instead.
 * - Every other status (400, 401, 403, 404, 409, 413, 415, 500, …) is an answer, never retried.
 *
 * Bounded: at most `maxAttempts` attempts (4: the first and three retries), exponential backoff from
 * `baseDelay` (250 ms, doubling, at most `maxDelay` 4 s) with jitter (each wait is between half and all of
 * its step), and a `deadline` (60 s) for the whole call, waits and attempts together: each attempt is cut at
 * `attemptTimeout` (30 s) or what is left of the deadline. A retry is only started when, after its wait, at
 * least `minAttemptTime` (1 s, or `attemptTimeout` when that is shorter) is left for it: an attempt cut after
 * a few milliseconds would turn a clean answer (a 429: nothing was done) into an unknown outcome (a write the
 * service may complete while the client has stopped listening). When the attempts or the deadline run out,
 * the last answer is what the call returns (a 503 surfaces as the API's `ServiceUnavailable` error), or the
 * last transport error.
 */
export interface RetryPolicy {
  /** Attempts in all, the first one included (1: never retry). */
  readonly maxAttempts: number
  /** The first backoff step; each next one doubles, up to `maxDelay`. */
  readonly baseDelay: Duration.DurationInput
  readonly maxDelay: Duration.DurationInput
  /** The longest `Retry-After` waited for (a longer one is waited for this long). */
  readonly maxRetryAfter: Duration.DurationInput
  /** One attempt, from sending to the answer's headers (a streamed body, such as the ledger export's, is not cut). */
  readonly attemptTimeout: Duration.DurationInput
  /** The whole call: attempts and waits. */
  readonly deadline: Duration.DurationInput
  /**
   * The least time a retry must have before the deadline (at most `attemptTimeout`): a retry that would get
   * less is not started, and the last outcome is the call's.
   */
  readonly minAttemptTime: Duration.DurationInput
}

export const defaultRetryPolicy: RetryPolicy = {
  maxAttempts: 4,
  baseDelay: "250 millis",
  maxDelay: "4 seconds",
  maxRetryAfter: "30 seconds",
  attemptTimeout: "30 seconds",
  deadline: "60 seconds",
  minAttemptTime: "1 second"
}

/** The header that makes a write safe to send again (CONTRACT.md section 4). */
export const IDEMPOTENCY_KEY_HEADER = "x-service-idempotency-key"

/** How a request may be sent again: a read, a write carrying an idempotency key, or any other write. */
export type RequestKind = "read" | "keyed-write" | "write"

export const requestKindOf = (request: HttpClientRequest.HttpClientRequest): RequestKind =>
  request.method === "GET" || request.method === "HEAD"
    ? "read"
    : request.headers[IDEMPOTENCY_KEY_HEADER] !== undefined
      ? "keyed-write"
      : "write"

/** What one attempt came to: an answer, or none (a transport error). */
export type AttemptOutcome = Either.Either<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>

/** Whether another attempt may follow this outcome, by the rules above (the attempt and deadline bounds aside). */
export const mayRetry = (kind: RequestKind, outcome: AttemptOutcome): boolean =>
  Either.match(outcome, {
    onRight: (response) => response.status === 429 || (response.status === 503 && kind !== "write"),
    // no answer at all; a request that could not even be built (bad URL, body encoding) is not sent again
    onLeft: (error) => error._tag === "RequestError" && error.reason === "Transport" && kind !== "write"
  })

/** `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date; none when absent or unreadable. */
export const retryAfterMillis = (header: string | undefined, now: number): Option.Option<number> => {
  if (header === undefined) return Option.none()
  const trimmed = header.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Option.some(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? Option.none() : Option.some(Math.max(0, at - now))
}

/** The backoff before attempt `failed + 1`: `baseDelay · 2^(failed−1)`, at most `maxDelay`, jittered to [½, 1]. */
export const backoffMillis = (policy: RetryPolicy, failed: number, random: number): number => {
  const step = Math.min(
    Duration.toMillis(policy.maxDelay),
    Duration.toMillis(policy.baseDelay) * 2 ** Math.max(0, failed - 1)
  )
  return Math.round(step * (0.5 + random / 2))
}

const timedOut = (request: HttpClientRequest.HttpClientRequest, after: number) =>
  new HttpClientError.RequestError({
    request,
    reason: "Transport",
    description: `no answer within ${after} ms`
  })

/** Reads and drops an answer that is not returned (its connection goes back to the pool). */
const discard = (response: HttpClientResponse.HttpClientResponse) => Effect.ignore(response.arrayBuffer)

/** The retry policy on an `HttpClient`: every request through it is sent by these rules. */
export const withRetries =
  (policy: RetryPolicy = defaultRetryPolicy) =>
  (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    HttpClient.transform(client, (send, request) =>
      Effect.gen(function* () {
        const kind = requestKindOf(request)
        const started = yield* Clock.currentTimeMillis
        const deadline = started + Duration.toMillis(policy.deadline)
        const attemptTimeout = Duration.toMillis(policy.attemptTimeout)
        const minAttempt = Math.min(Duration.toMillis(policy.minAttemptTime), attemptTimeout)
        for (let attempt = 1; ; attempt++) {
          const left = deadline - (yield* Clock.currentTimeMillis)
          const limit = Math.max(1, Math.min(attemptTimeout, left))
          const outcome: AttemptOutcome = yield* send.pipe(
            Effect.timeoutFail({ duration: Duration.millis(limit), onTimeout: () => timedOut(request, limit) }),
            Effect.either
          )
          if (attempt >= policy.maxAttempts || !mayRetry(kind, outcome)) return yield* outcome
          const now = yield* Clock.currentTimeMillis
          const asked = Either.match(outcome, {
            onRight: (response) => retryAfterMillis(response.headers["retry-after"], now),
            onLeft: () => Option.none<number>()
          })
          const random = yield* Random.next
          const wait = Option.match(asked, {
            onSome: (millis) => Math.min(millis, Duration.toMillis(policy.maxRetryAfter)),
            onNone: () => backoffMillis(policy, attempt, random)
          })
          // a retry that would not have `minAttempt` left after its wait is not started: the last outcome is the
          // answer (never an attempt cut after a few milliseconds, its outcome unknown)
          if (now + wait + minAttempt > deadline) return yield* outcome
          if (Either.isRight(outcome)) yield* discard(outcome.right)
          yield* Effect.sleep(Duration.millis(wait))
        }
      })
    )

// ---- idempotency keys, from the API declaration

interface KeyedEndpoint {
  readonly method: string
  readonly path: RegExp
}

const declaresKey = (ast: SchemaAST.AST): boolean =>
  SchemaAST.getPropertySignatures(ast).some((property) => property.name === IDEMPOTENCY_KEY_HEADER)

/** `/v1/orders/:order_id/refunds` → a RegExp matching its concrete paths (after any prefix of the base URL). */
const pathPattern = (path: string) =>
  new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "[^/]+")}$`)

/** The endpoints of `api` whose declaration takes X-Service-Idempotency-Key. */
export const keyedEndpointsOf = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlyArray<KeyedEndpoint> => {
  const keyed: Array<KeyedEndpoint> = []
  HttpApiModule.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      if (Option.isSome(endpoint.headersSchema) && declaresKey(endpoint.headersSchema.value.ast)) {
        keyed.push({ method: endpoint.method, path: pathPattern(endpoint.path) })
      }
    }
  })
  return keyed
}

/** The endpoints of `api` whose declaration takes X-Service-Idempotency-Key, as `group.endpoint` names. */
export const keyedEndpointNamesOf = <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<Id, Groups, E, R>
): ReadonlySet<string> => {
  const names = new Set<string>()
  HttpApiModule.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ group, endpoint }) => {
      if (Option.isSome(endpoint.headersSchema) && declaresKey(endpoint.headersSchema.value.ast)) {
        names.add(`${group.identifier}.${endpoint.name}`)
      }
    }
  })
  return names
}

/**
 * Gives a request to a keyed endpoint that carries no key one of its own, generated once per call: this runs
 * before the retries (as the client's request preprocessing), so every attempt of the call sends the same key.
 */
export const withIdempotencyKeys =
  (keyed: ReadonlyArray<KeyedEndpoint>, newKey: Effect.Effect<string> = Effect.sync(() => crypto.randomUUID())) =>
  (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    HttpClient.mapRequestEffect(client, (request) => {
      if (request.headers[IDEMPOTENCY_KEY_HEADER] !== undefined) return Effect.succeed(request)
      const path = new URL(request.url, "http://path.only").pathname
      const takesKey = keyed.some((endpoint) => endpoint.method === request.method && endpoint.path.test(path))
      return takesKey
        ? Effect.map(newKey, (key) => Request.setHeader(request, IDEMPOTENCY_KEY_HEADER, key))
        : Effect.succeed(request)
    })
