import { HttpApiBuilder, type HttpClient, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../../src/config.js"
import type { ApiTarget } from "./mcp-api-client.js"
import { McpLoopback, callerApiKey, loopbackHeaders } from "./mcp-caller.js"
import { makeMcpServer } from "./mcp-server.js"

/**
 * `/mcp`: the MCP server over streamable HTTP, stateless (no session: a new server and transport per request,
 * JSON answers). Its tools and resources call this service's own `/v1` over loopback with the caller's key
 * (`X-API-Key`, or `Authorization: Bearer`), so a key without one lists the tools and uses only the public
 * ones. Like every route it is behind the error boundary: the body-size limit, the rate limit (by key, else by
 * address). A stateless server opens no stream and ends no session: GET and DELETE are 405.
 */

const jsonRpcError = (status: number, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(
    { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
    { status, headers: { "cache-control": "no-store", ...headers } }
  )

const METHOD_NOT_ALLOWED = jsonRpcError(
  405,
  "method not allowed: this MCP server is stateless, it takes POST only (no SSE stream, no session to end)",
  { allow: "POST" }
)

/** Where the service listens, seen from inside: loopback on its port. */
const loopbackUrl = (address: HttpServer.Address, fallback: string) =>
  address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : fallback.replace(/\/+$/, "")

export const McpRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const config = yield* AppConfig
    const loopback = yield* McpLoopback
    const context = yield* Effect.context<HttpClient.HttpClient>()
    const baseUrl = loopbackUrl(server.address, config.baseUrl)
    const ownOrigin = new URL(config.baseUrl).origin

    const handle = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // a browser page of another site must not drive it (DNS rebinding): MCP clients send no Origin
      const origin = request.headers.origin
      if (origin !== undefined && origin !== ownOrigin) return jsonRpcError(403, `origin ${origin} is not allowed`)
      // read here, under the body-size limit; a body too large or cut fails to the error boundary
      const body = yield* request.text
      // one message per request: a JSON-RPC batch (dropped from MCP in 2025-06-18) would fan one request out into
      // up to a hundred /v1 calls under a single rate-limit token
      if (body.trimStart().startsWith("["))
        return jsonRpcError(400, "JSON-RPC batches are not accepted: send one message per request")
      const headers = new Headers()
      for (const [name, value] of Object.entries(request.headers)) headers.set(name, value)
      const web = new Request(new URL(request.url, baseUrl), { method: "POST", headers, body })
      const target: ApiTarget = {
        baseUrl,
        apiKey: callerApiKey(request.headers),
        headers: loopbackHeaders(
          loopback,
          Option.getOrElse(request.remoteAddress, () => "unknown")
        )
      }
      const answer = yield* Effect.scoped(
        Effect.gen(function* () {
          const mcp = yield* makeMcpServer(target)
          const transport = new WebStandardStreamableHTTPServerTransport({
            sessionIdGenerator: undefined,
            enableJsonResponse: true
          })
          yield* Effect.promise(() => mcp.connect(transport))
          const response = yield* Effect.promise(() => transport.handleRequest(web))
          const text = yield* Effect.promise(() => response.text())
          return { status: response.status, contentType: response.headers.get("content-type"), text }
        })
      )
      return HttpServerResponse.text(answer.text, {
        status: answer.status,
        headers: { "cache-control": "no-store" },
        ...(answer.contentType === null ? {} : { contentType: answer.contentType })
      })
    }).pipe(Effect.provide(context))

    yield* router.post("/mcp", handle)
    yield* router.get("/mcp", Effect.succeed(METHOD_NOT_ALLOWED))
    yield* router.del("/mcp", Effect.succeed(METHOD_NOT_ALLOWED))
  })
).pipe(Layer.provide(NodeHttpClient.layer))
