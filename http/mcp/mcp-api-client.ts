import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Option, Redacted, Schema } from "effect"
import type { ApiAnswer, ApiRequest } from "./mcp-tools.js"

/**
 * The MCP server's one way to the service: an HTTP request to the `/v1` API (and `/llms.txt`) with the caller's
 * API key. For `/mcp` the service itself over loopback, for stdio the API at FACET_API_URL: either way what a
 * tool may do, and what it is told, is what the API decides for that key.
 */
export interface ApiTarget {
  /** Where the API is, without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  /** Sent on every request (the loopback marker of `/mcp`). */
  readonly headers: Readonly<Record<string, string>>
}

/** The API did not answer: nothing is known of what it did. */
export class ApiUnreachable extends Schema.TaggedError<ApiUnreachable>()("ApiUnreachable", {
  url: Schema.String,
  reason: Schema.String
}) {}

/** How long one call may take (the API answers well within it; a stuck node makes it 503 first). */
const CALL_TIMEOUT = Duration.seconds(60)

export const USER_AGENT = "facet-mcp"

/** What went wrong underneath (ECONNREFUSED, a reset), rather than the client's "Transport error". */
const reasonOf = (error: { readonly message: string; readonly cause?: unknown }) => {
  const cause = error.cause
  if (typeof cause !== "object" || cause === null) return error.message
  const code = "code" in cause && typeof cause.code === "string" ? cause.code : ""
  const message = cause instanceof Error ? cause.message : ""
  return [code, message].filter((part) => part !== "").join(": ") || error.message
}

export const callApi = (target: ApiTarget, request: ApiRequest) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const url = `${target.baseUrl}${request.url}`
    let http = HttpClientRequest.make(request.method)(url).pipe(
      HttpClientRequest.setHeaders({
        accept: "application/json, text/plain",
        "user-agent": USER_AGENT,
        ...target.headers,
        ...request.headers,
        ...Option.match(target.apiKey, { onNone: () => ({}), onSome: (key) => ({ "x-api-key": Redacted.value(key) }) })
      })
    )
    if (Option.isSome(request.body)) {
      http = HttpClientRequest.bodyText(http, JSON.stringify(request.body.value), "application/json")
    }
    return yield* client.execute(http).pipe(
      Effect.flatMap((response) =>
        Effect.map(
          response.text,
          (text): ApiAnswer => ({ status: response.status, contentType: response.headers["content-type"] ?? "", text })
        )
      ),
      Effect.scoped,
      Effect.timeoutFail({
        duration: CALL_TIMEOUT,
        onTimeout: () => new ApiUnreachable({ url, reason: `no answer within ${Duration.format(CALL_TIMEOUT)}` })
      }),
      Effect.catchTags({
        RequestError: (error) => new ApiUnreachable({ url, reason: reasonOf(error) }),
        ResponseError: (error) => new ApiUnreachable({ url, reason: reasonOf(error) })
      })
    )
  })
