// the modules themselves, not the package's index: a client's start is shorter without the rest
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { Config, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { makeMcpServer } from "./mcp-server.js"

/**
 * `npm run mcp`: the MCP server over stdio, for an MCP client that starts it (Claude Desktop, Cursor, VS Code).
 * A client of the API and nothing more: no database, no keys of the service; each tool call is one request
 * to FACET_API_URL (default http://localhost:8080, `npm start`'s) with FACET_API_KEY (optional: without it
 * only the public tools work, the others answer the API's 401). stdout carries the protocol alone: logs go to
 * stderr.
 */

const LOCAL_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

const settings = Config.all({
  apiUrl: Config.string("FACET_API_URL").pipe(
    Config.withDefault("http://localhost:8080"),
    Config.validate({
      message: "FACET_API_URL must be an https URL (http only on this machine, e.g. http://localhost:8080)",
      // the API key travels with every call: in clear text only to this machine
      validation: (url) =>
        URL.canParse(url) &&
        (new URL(url).protocol === "https:" ||
          (new URL(url).protocol === "http:" && LOCAL_HOSTS.includes(new URL(url).hostname)))
    })
  ),
  apiKey: Config.option(Config.redacted("FACET_API_KEY"))
})

const main = Effect.gen(function* () {
  const { apiUrl, apiKey } = yield* settings
  const key = Option.filter(apiKey, (k) => Redacted.value(k).trim() !== "")
  const server = yield* makeMcpServer({ baseUrl: apiUrl.replace(/\/+$/, ""), apiKey: key, headers: {} })
  const transport = new StdioServerTransport()
  yield* Effect.promise(() => server.connect(transport))
  yield* Effect.logInfo(
    `facet MCP server on stdio for ${apiUrl} (${Option.isSome(key) ? "with FACET_API_KEY" : "no FACET_API_KEY: public tools only"})`
  )
  // until the client closes our stdin (or a signal interrupts: runMain closes the server on the way out)
  yield* Effect.async<void>((resume) => {
    const done = () => resume(Effect.void)
    process.stdin.once("end", done)
    process.stdin.once("close", done)
    return Effect.sync(() => {
      process.stdin.off("end", done)
      process.stdin.off("close", done)
    })
  })
}).pipe(
  Effect.scoped,
  Effect.catchTag("ConfigError", (error) =>
    Effect.zipRight(
      Effect.logError(`invalid configuration: ${error}`),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  )
)

// stdout is the protocol's: every log line goes to stderr
const StderrLogger = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)),
  Logger.minimumLogLevel(LogLevel.Info)
)

const HELP = `npm run mcp: the MCP server over stdio, for an MCP client that starts it (Claude Desktop, Cursor,
VS Code); it is a client of the API and holds nothing of the service's.

USAGE
  npm run mcp                 serve MCP on stdin/stdout until the client closes stdin

ENVIRONMENT
  FACET_API_URL   the API (default http://localhost:8080; http only on this machine, https otherwise)
  FACET_API_KEY   the merchant's API key (optional: without it only the public tools work)

Logs go to stderr: stdout carries the protocol alone. More: docs/guides/mcp.md`

// the server takes no arguments: --help is this text (exit 0), anything else a usage error (exit 2)
const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) console.log(HELP)
else if (args.length > 0) {
  console.error(`npm run mcp takes no arguments, only its environment (got ${args.join(" ")}): npm run mcp -- --help`)
  process.exitCode = 2
} else
  NodeRuntime.runMain(main.pipe(Effect.provide(Layer.merge(NodeHttpClient.layer, StderrLogger))), {
    disablePrettyLogger: true
  })
