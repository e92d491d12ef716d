import { HttpServer } from "@effect/platform"
import { ConfigProvider, Context, Duration, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { HttpLive } from "../http/server.js"
import { makeCoreLive } from "../src/app.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { DevnetsLive } from "../src/devnet/devnets.js"
import { AppConfig, appConfig, type AppConfigShape } from "../src/config.js"
import { createTestDatabase } from "./database.js"
import { FAST_DEVNETS } from "./fast-devnets.js"
import { AdjustableClockLive } from "./policy-clock.js"

/** The well-known development mnemonic: its first addresses are published test vectors. */
export const TEST_MNEMONIC = "test test test test test test test test test test test junk"

export interface TestResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly body: unknown
}

export interface RequestOptions {
  readonly json?: unknown
  readonly rawBody?: string
  readonly headers?: Record<string, string>
  readonly apiKey?: string
}

/** Talks to the service under test over real HTTP on its free port. */
export class TestClient extends Context.Tag("test/TestClient")<
  TestClient,
  {
    readonly url: string
    readonly request: (method: string, path: string, options?: RequestOptions) => Effect.Effect<TestResponse>
  }
>() {}

const TestClientLive = Layer.effect(
  TestClient,
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const address = server.address
    const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
    const request = (method: string, path: string, options: RequestOptions = {}) =>
      Effect.promise(async (): Promise<TestResponse> => {
        const headers: Record<string, string> = { ...options.headers }
        if (options.apiKey !== undefined) headers["x-api-key"] = options.apiKey
        let body: string | undefined
        if (options.json !== undefined) {
          body = JSON.stringify(options.json)
          headers["content-type"] ??= "application/json"
        } else if (options.rawBody !== undefined) {
          body = options.rawBody
          headers["content-type"] ??= "application/json"
        }
        const response = await fetch(`${url}${path}`, { method, headers, body, redirect: "manual" })
        const text = await response.text()
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          parsed = undefined
        }
        return { status: response.status, headers: response.headers, text, body: parsed }
      })
    return { url, request }
  })
)

/** Keeps every log line, message and annotations, as text. */
const capturingLogger = (lines: Array<string>) =>
  Logger.make(({ annotations, cause, message }) => {
    lines.push(`${JSON.stringify(message)} ${JSON.stringify([...annotations])} ${String(cause)}`)
  })

/**
 * The whole service, as `npm start` wires it, on a free port against a fresh database of its own.
 * Overrides adjust the configuration for one test file (rate limits, for example).
 */
/** Endpoints that no node serves: for tests that never touch a chain (they start no devnet). */
export const NoChainsLive = Layer.succeed(ChainEndpoints, {
  bep20: { rpcUrl: "http://127.0.0.1:9", chainId: 31337, tokens: new Map(), confirmations: 3, traces: "off" },
  tron: { url: "http://127.0.0.1:9", tokens: new Map(), confirmations: 3 },
  solana: { rpcUrl: "http://127.0.0.1:9", tokens: new Map() }
})

/**
 * What the service's `Config` reads (FACET_* variables): `env` first, then this process's environment, then
 * the fast devnets' settings (`fast`). Given to the service's layers, never written to `process.env`: test
 * files share a worker process one after another (vitest.config.ts), so a variable set there would leak
 * into the next file's service.
 */
const serviceConfig = (env: Record<string, string>, fast: boolean) =>
  Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries(env)), { pathDelim: "_" }).pipe(
      ConfigProvider.orElse(() => ConfigProvider.fromEnv()),
      ConfigProvider.orElse(() =>
        ConfigProvider.fromMap(new Map(Object.entries(fast ? FAST_DEVNETS : {})), { pathDelim: "_" })
      )
    )
  )

export const TestAppLive = (
  overrides: Partial<AppConfigShape> = {},
  options: {
    readonly captureLogs?: Array<string>
    readonly chains?: "none" | "devnet"
    /** The chains the service talks to, in place of the devnets (for example the devnets behind a faulty proxy). */
    readonly network?: Layer.Layer<ChainEndpoints, unknown, Layer.Layer.Context<typeof DevnetsLive>>
    /**
     * Devnets in this process (`chains: "devnet"` or a `network`) are fast (`test/fast-devnets.ts`) unless
     * "as npm start" (their default block times and confirmations); "fast" applies them with no chains too.
     */
    readonly devnets?: "fast" | "as npm start"
    /** Configuration variables for this service (FACET_FEE_WAIT_MINUTES, ...), ahead of the environment's. */
    readonly env?: Record<string, string>
  } = {}
) => {
  const withDevnets = options.chains === "devnet" || options.network !== undefined
  const fast = options.devnets === undefined ? withDevnets : options.devnets === "fast"
  const ConfigLive = Layer.scoped(
    AppConfig,
    Effect.gen(function* () {
      const loaded = yield* Effect.orDie(appConfig)
      const databaseUrl = overrides.databaseUrl ?? Option.some(yield* createTestDatabase)
      // removed when the service under test has stopped (its devnets keep their chains here)
      const dataDir = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-test-data-"))),
        (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
      )
      return {
        ...loaded,
        port: 0,
        dataDir,
        baseUrl: "http://facet.test",
        consoleBaseUrl: "http://facet.test/console",
        rateLimit: { perSecond: 1000, burst: 1000 },
        masterSeed: Option.some(Redacted.make(TEST_MNEMONIC)),
        masterSeedFile: Option.none(),
        orderExpiryInterval: Duration.millis(200),
        indexer: {
          ...loaded.indexer,
          chains: options.chains === "devnet" ? loaded.indexer.chains : [],
          pollInterval: Duration.millis(100)
        },
        webhooks: {
          pollInterval: Duration.millis(50),
          concurrency: 16,
          perMerchant: 2,
          timeout: Duration.seconds(2),
          retryScale: 0.01
        },
        ...overrides,
        databaseUrl
      }
    })
  )
  return TestClientLive.pipe(
    Layer.provideMerge(HttpLive),
    // the policy clock moves when the test says (ClockControl), the same instance the service reads
    Layer.provideMerge(
      makeCoreLive(options.network ?? (options.chains === "devnet" ? DevnetsLive : NoChainsLive), AdjustableClockLive)
    ),
    Layer.provideMerge(AdjustableClockLive),
    Layer.provideMerge(ConfigLive),
    Layer.provide(serviceConfig(options.env ?? {}, fast)),
    Layer.provide(
      options.captureLogs === undefined
        ? Logger.minimumLogLevel(LogLevel.Warning)
        : Layer.merge(
            Logger.replace(Logger.defaultLogger, capturingLogger(options.captureLogs)),
            Logger.minimumLogLevel(LogLevel.All)
          )
    )
  )
}
