import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { asRecord } from "./json.js"
import { repositoryRoot } from "./source-files.js"

/** MCP clients of the service (the official SDK's), for tests that drive it as an agent would. */

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const recordsOf = (value: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(value) ? value.filter(isRecord) : []

/** A tool call's result, read: `structured` is its structuredContent (`{status, error, …}` for an error). */
export interface McpOutcome {
  readonly isError: boolean
  readonly structured: Record<string, unknown>
  readonly text: string
}

export const mcpOutcomeOf = (result: unknown): McpOutcome => {
  const r = asRecord(result)
  const text = recordsOf(r.content)
    .map((c) => String(c.text ?? ""))
    .join("")
  return { isError: r.isError === true, structured: isRecord(r.structuredContent) ? r.structuredContent : {}, text }
}

/** Calls a tool; a JSON-RPC error (an unknown tool) fails the test. */
export const mcpCall = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.map(
    Effect.promise(() => client.callTool({ name, arguments: args })),
    mcpOutcomeOf
  )

/** Calls a tool that must succeed: its structured answer, or a failed test saying what the tool answered. */
export const mcpOk = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.flatMap(mcpCall(client, name, args), (outcome) =>
    outcome.isError
      ? Effect.dieMessage(`${name} answered an error: ${outcome.text}`)
      : Effect.succeed(outcome.structured)
  )

/** A resource's first contents; fails with the JSON-RPC error (`code`, `message`, `data`: the API's status and error). */
export const mcpRead = (client: Client, uri: string) =>
  Effect.tryPromise({
    try: () => client.readResource({ uri }),
    catch: (error) => asRecord({ ...asRecord(error), message: error instanceof Error ? error.message : "" })
  }).pipe(
    Effect.map((result) => {
      const [first] = recordsOf(result.contents)
      return { mimeType: String(first?.mimeType), text: String(first?.text) }
    })
  )

const connected = (transport: StreamableHTTPClientTransport | StdioClientTransport) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "facet-test", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** A client of the service's `/mcp` (e.g. `TestClient.url`), sending these headers (`{"x-api-key": key}`). */
export const mcpOverHttp = (url: string, headers: Record<string, string> = {}) =>
  connected(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))

/** A client of `npm run mcp` (its own node process) for the API at `url`, with `apiKey` when given. */
export const mcpOverStdio = (url: string, apiKey?: string) =>
  connected(
    new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "http/mcp/mcp-cli.ts"],
      cwd: repositoryRoot,
      env: {
        ...getDefaultEnvironment(),
        FACET_API_URL: url,
        ...(apiKey === undefined ? {} : { FACET_API_KEY: apiKey })
      },
      stderr: "ignore"
    })
  )
