import type { HttpClient } from "@effect/platform"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Either, Exit, Option, Runtime, Schema } from "effect"
import { CONTRACT_VERSION } from "../../src/domain/changelog.js"
import { type ApiTarget, callApi } from "./mcp-api-client.js"
import { RESOURCES, RESOURCE_TEMPLATES, readResource } from "./mcp-resources.js"
import { TOOLS, listedTool, toolError, toolNamed, toolRequest, toolResult } from "./mcp-tools.js"

/**
 * The MCP server (the official SDK's low-level `Server`, which takes each tool's JSON Schema as it is: the tools
 * are derived at run time from the API's declaration). One per connection: a stdio process, or one `/mcp`
 * request. Every tool call and resource read is one request to the API (or a few, for the open orders) with
 * the caller's key, so the API decides what the caller may do and says why not.
 */

export const INSTRUCTIONS = [
  "Facet: custodial crypto payments (TRON, BNB Smart Chain, Solana) for a merchant.",
  "Each tool is one call of the /v1 HTTP API with your API key: its description is the endpoint's, its errors the API's ({status, error}).",
  "No key yet? onboarding_merchant_apply provisions a merchant and returns its key; put the key in your MCP client's configuration.",
  "Amounts are decimal strings. Creating tools take idempotency_key: pass the same one when you retry a call.",
  "Withdrawals, withdrawal batches and refunds are only requested: a human approves them in the merchant console, and an AI agent never can.",
  "Read facet://llms.txt for the rules, facet://asset-policies for what can be used, facet://orders/open for orders awaiting payment."
].join(" ")

/** A request the MCP protocol refuses (an unknown tool, a resource the API refused): a JSON-RPC error. */
export class McpRefusal extends Schema.TaggedError<McpRefusal>()("McpRefusal", {
  code: Schema.Number,
  message: Schema.String,
  data: Schema.optional(Schema.Unknown)
}) {}

/** A tool call: an error result for arguments that make no request, else the API's answer as the result. */
export const callTool = (target: ApiTarget, name: string, args: unknown) =>
  Effect.gen(function* () {
    const tool = yield* Option.match(toolNamed(name), {
      onNone: () => Effect.fail(new McpRefusal({ code: ErrorCode.InvalidParams, message: `unknown tool: ${name}` })),
      onSome: Effect.succeed
    })
    const request = toolRequest(tool, args)
    if (Either.isLeft(request)) return toolError({ error: `invalid arguments: ${request.left}` })
    const { generatedKey } = request.right
    return yield* callApi(target, request.right).pipe(
      Effect.map((answer) => toolResult(answer, generatedKey)),
      Effect.catchTag("ApiUnreachable", (e) => {
        const advice =
          tool.annotations.readOnlyHint === true
            ? "retry"
            : Option.isSome(generatedKey)
              ? "it may or may not have been done: retry with this idempotency_key"
              : "it may or may not have been done: check before you retry"
        return Effect.succeed(
          toolError({
            status: 503,
            error: `could not reach the Facet API at ${e.url} (${e.reason}); ${advice}`,
            ...Option.match(generatedKey, { onNone: () => ({}), onSome: (key) => ({ idempotency_key: key }) })
          })
        )
      })
    )
  }).pipe(Effect.withSpan("mcp.callTool", { attributes: { tool: name } }))

/** The JSON-RPC error code of a resource the API refused. */
const resourceErrorCode = (status: number) =>
  status === 404 ? -32002 : status === 400 ? ErrorCode.InvalidParams : ErrorCode.InternalError

const read = (target: ApiTarget, uri: string) =>
  readResource(target, uri).pipe(
    Effect.mapError(
      (e) =>
        new McpRefusal({
          code: resourceErrorCode(e.status),
          message: `${e.status}: ${e.error}`,
          data: { uri: e.uri, status: e.status, error: e.error }
        })
    ),
    Effect.withSpan("mcp.readResource", { attributes: { uri } })
  )

/** A new server for one connection, closed with the scope. */
export const makeMcpServer = (target: ApiTarget) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<HttpClient.HttpClient>()
    /** Runs a handler's effect for the SDK: a refusal becomes the SDK's McpError, a defect an internal error. */
    const run = <A>(effect: Effect.Effect<A, McpRefusal, HttpClient.HttpClient>, signal: AbortSignal): Promise<A> =>
      // a request the client cancels (or a connection that ends) interrupts its call
      Runtime.runPromiseExit(runtime)(
        // a defect is answered "internal error": the log says what it was
        Effect.tapDefect(effect, (cause) => Effect.logError("an MCP request failed", cause)),
        { signal }
      ).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure)) throw new McpError(failure.value.code, failure.value.message, failure.value.data)
        throw new McpError(
          ErrorCode.InternalError,
          Cause.isInterruptedOnly(exit.cause) ? "cancelled" : "internal error"
        )
      })

    const server = new Server(
      { name: "facet", title: "Facet payments", version: CONTRACT_VERSION },
      { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS }
    )
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS.map(listedTool) }))
    server.setRequestHandler(
      CallToolRequestSchema,
      (request, extra): Promise<CallToolResult> =>
        run(callTool(target, request.params.name, request.params.arguments), extra.signal)
    )
    server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [...RESOURCES] }))
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: [...RESOURCE_TEMPLATES]
    }))
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      run(read(target, request.params.uri), extra.signal)
    )
    yield* Effect.addFinalizer(() => Effect.promise(() => server.close()))
    return server
  })
