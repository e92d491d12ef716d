import {
  HttpApi,
  HttpApiBuilder,
  HttpApiError,
  HttpApiSchema,
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Option, Schema } from "effect"
import { AppConfig } from "../src/config.js"
import {
  BadRequestError,
  InternalError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimited,
  RateLimitedError,
  ServiceUnavailableError,
  UnsupportedMediaTypeError
} from "../src/domain/errors.js"
import { hashSecret } from "../src/merchants/credentials.js"
import { ApiKeys } from "../src/merchants/api-keys.js"
import { FacetApi } from "./api.js"
import { RateLimiter } from "./rate-limiter.js"
import { callerApiKey, McpLoopback, rateLimitAddress } from "./mcp/mcp-caller.js"

/** What the boundary itself can answer with; every one is declared on the whole API. */
type BoundaryError =
  | BadRequestError
  | NotFoundError
  | MethodNotAllowedError
  | PayloadTooLargeError
  | InternalError
  | ServiceUnavailableError
  | UnsupportedMediaTypeError

interface RoutePattern {
  readonly method: string
  readonly pattern: RegExp
}

/** Every (method, path) the API declares, to tell a wrong method (405) from an unknown path (404). */
const declaredRoutes = (): ReadonlyArray<RoutePattern> => {
  const routes: Array<RoutePattern> = []
  HttpApi.reflect(FacetApi, {
    onGroup: () => undefined,
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path
        .split("/")
        .map((part) =>
          // the router takes a path parameter of at most 100 characters (find-my-way's limit): longer is no route
          part.startsWith(":") ? "[^/]{1,100}" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        )
        .join("/")
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}$`) })
    }
  })
  return routes
}

const describeIssues = (error: HttpApiError.HttpApiDecodeError): string => {
  // an optional field that failed also fails "is undefined": that branch says nothing to the client
  const relevant = error.issues.filter((issue) => !issue.message.startsWith("Expected undefined, actual"))
  const issues = (relevant.length > 0 ? relevant : error.issues).map((issue) =>
    issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ${issue.message}` : issue.message
  )
  return `invalid request: ${issues.length > 0 ? issues.join("; ") : error.message}`
}

const isBodyTooLarge = (error: HttpServerError.RequestError) =>
  error.cause instanceof Error && error.cause.message.includes("maxBytes exceeded")

const sqlState = (error: SqlError) => {
  const cause = error.cause
  return typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
}

/** PostgreSQL error classes that mean "the database is not there right now", not "the query was wrong". */
const isUnavailable = (error: SqlError): boolean => {
  const code = sqlState(error)
  return code === "" || code.startsWith("08") || code.startsWith("57") || code.startsWith("53") || code.startsWith("E")
}

/** PostgreSQL refuses a NUL character in text (22021, or 22P05 when it cannot be converted): the client's input, not our fault. */
const isNulCharacter = (error: SqlError) => sqlState(error) === "22021" || sqlState(error) === "22P05"

/** A body nested so deeply that parsing or decoding it overflows the stack. */
const isTooDeep = (error: unknown) => error instanceof RangeError && error.message.includes("call stack")

/** A /v1 request with a body must say it is JSON (a form-encoded body is not read as if it were). */
const wrongContentType = (request: HttpServerRequest.HttpServerRequest, path: string) => {
  if (!path.startsWith("/v1/") || (request.method !== "POST" && request.method !== "PUT" && request.method !== "PATCH"))
    return false
  const hasBody =
    Number(request.headers["content-length"] ?? "0") > 0 || request.headers["transfer-encoding"] !== undefined
  const type = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? ""
  return hasBody && type !== "application/json" && !type.endsWith("+json")
}

const encodeRateLimited = Schema.encodeSync(RateLimited)

/**
 * The one place where anything that is not already one of our API errors becomes one: schema failures
 * (400), bad JSON (400), oversized bodies (413), unknown routes (404/405), an unavailable database
 * (503) and defects (500, logged, no stack trace to the client). Also applies the body-size limit and
 * the per-key rate limit before any handler runs.
 */
export const ErrorBoundaryLive = HttpApiBuilder.middleware(
  FacetApi,
  Effect.gen(function* () {
    const config = yield* AppConfig
    const limiter = yield* RateLimiter
    const loopback = yield* McpLoopback
    const keys = yield* ApiKeys
    const routes = declaredRoutes()

    const notFound = (method: string, path: string): BoundaryError => {
      const allowed = routes.filter((r) => r.pattern.test(path)).map((r) => r.method)
      return allowed.length > 0
        ? new MethodNotAllowedError({
            error: `method ${method} is not allowed on ${path.length > 120 ? `${path.slice(0, 120)}…` : path}; allowed: ${[...new Set([...allowed, ...(allowed.includes("GET") ? ["HEAD"] : [])])].join(", ")}`
          })
        : new NotFoundError({
            error: `no such endpoint: ${method} ${path.length > 120 ? `${path.slice(0, 120)}…` : path}`
          })
    }

    const fromFailure = (
      error: unknown,
      request: HttpServerRequest.HttpServerRequest
    ): Option.Option<BoundaryError> => {
      if (error instanceof HttpApiError.HttpApiDecodeError)
        return Option.some(new BadRequestError({ error: describeIssues(error) }))
      if (error instanceof HttpServerError.RouteNotFound) {
        return Option.some(notFound(request.method, new URL(request.url, "http://localhost").pathname))
      }
      if (error instanceof HttpServerError.RequestError) {
        return Option.some(
          isBodyTooLarge(error)
            ? new PayloadTooLargeError({ error: `request body exceeds ${config.maxBodyBytes} bytes` })
            : new BadRequestError({ error: "request body is not valid JSON" })
        )
      }
      if (isTooDeep(error)) return Option.some(new BadRequestError({ error: "request body is nested too deeply" }))
      if (error instanceof SqlError) {
        if (isNulCharacter(error))
          return Option.some(
            new BadRequestError({ error: "a NUL character (\\u0000 or %00) is not accepted in any field or path" })
          )
        return Option.some(
          isUnavailable(error)
            ? new ServiceUnavailableError({ error: "the database is temporarily unavailable; retry with backoff" })
            : new InternalError({ error: "internal error; nothing was changed" })
        )
      }
      return Option.none()
    }

    return (app) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = new URL(request.url, "http://localhost").pathname
        if (request.url.includes("\u0000") || /%00/i.test(request.url))
          return yield* new BadRequestError({ error: "a NUL character (%00) is not accepted in a URL" })
        if (wrongContentType(request, path)) {
          return yield* new UnsupportedMediaTypeError({
            error: `the body of ${request.method} ${path} must be JSON: send Content-Type: application/json`
          })
        }
        const declaredLength = Number(request.headers["content-length"] ?? "0")
        if (Number.isFinite(declaredLength) && declaredLength > config.maxBodyBytes) {
          return yield* new PayloadTooLargeError({ error: `request body exceeds ${config.maxBodyBytes} bytes` })
        }
        // /mcp takes its key as a bearer token too; the /v1 calls /mcp makes for a caller without a key count
        // against the caller's address, not loopback's (http/mcp/mcp-caller.ts)
        const apiKey =
          path === "/mcp" ? Option.getOrUndefined(callerApiKey(request.headers)) : request.headers["x-api-key"]
        // a key of its own bucket once it has authenticated here; until then (a made-up key too) its caller's address
        const keyHash = apiKey !== undefined && apiKey !== "" ? hashSecret(apiKey) : undefined
        const bucket =
          keyHash !== undefined && keys.authenticatedLately(keyHash)
            ? `key:${keyHash}`
            : `addr:${rateLimitAddress(loopback, request.headers, request.remoteAddress)}`
        const wait = yield* limiter.take(bucket)
        if (Option.isSome(wait)) {
          const error = new RateLimitedError({ error: `rate limit exceeded; retry after ${wait.value} s` })
          return yield* HttpServerResponse.json(encodeRateLimited(error), {
            status: HttpApiSchema.getStatusError(RateLimited),
            headers: { "retry-after": String(wait.value) }
          }).pipe(Effect.orDie)
        }
        return yield* app
      }).pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(config.maxBodyBytes)),
        Effect.catchAllCause((cause) =>
          Effect.gen(function* () {
            if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
            const request = yield* HttpServerRequest.HttpServerRequest
            const failure = Cause.failureOption(cause)
            const defect = Cause.dieOption(cause)
            const squashed = Option.isSome(failure) ? failure.value : Option.getOrUndefined(defect)
            const mapped = fromFailure(squashed, request)
            if (Option.isSome(mapped)) {
              if (mapped.value._tag === "Internal" || mapped.value._tag === "ServiceUnavailable") {
                yield* Effect.logError("request failed").pipe(Effect.annotateLogs({ cause: Cause.pretty(cause) }))
              }
              return yield* mapped.value
            }
            if (Option.isSome(failure)) return yield* Effect.failCause(cause)
            yield* Effect.logError("unexpected defect").pipe(Effect.annotateLogs({ cause: Cause.pretty(cause) }))
            return yield* new InternalError({ error: "internal error" })
          })
        )
      )
  }),
  { withContext: true }
)
