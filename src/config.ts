import { Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import * as path from "node:path"

export type Network = "devnet" | "mainnet"

/** Everything the service reads from its environment, validated once at start-up. */
export interface AppConfigShape {
  readonly port: number
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly baseUrl: string
  readonly network: Network
  readonly rateLimit: { readonly perSecond: number; readonly burst: number }
  /** Submissions of a payment link's public form per minute, all visitors together (a burst of as many). */
  readonly paymentLinkVisitsPerMinute: number
  /** Of those, what one client address may make per minute on one link (a burst of as many). */
  readonly paymentLinkVisitsPerClientPerMinute: number
  readonly maxBodyBytes: number
  readonly consoleTokenTtl: Duration.Duration
  readonly consoleBaseUrl: string
  /** BIP-39 mnemonic of the HD master secret (FACET_MASTER_SEED), never stored in the database. */
  readonly masterSeed: Option.Option<Redacted.Redacted<string>>
  /** A file holding the mnemonic (FACET_MASTER_SEED_FILE), for secret mounts. */
  readonly masterSeedFile: Option.Option<string>
  /** How often expired orders are looked for. */
  readonly orderExpiryInterval: Duration.Duration
  readonly indexer: {
    /** Chains indexed inside this process (FACET_INDEXER_CHAINS; "none" when indexers run apart). */
    readonly chains: ReadonlyArray<"TRC20" | "BEP20" | "SOLANA">
    readonly batchSize: number
    /** Batches asked of the node ahead of the one being written (FACET_INDEXER_PREFETCH). */
    readonly prefetchBatches: number
    /** Batches of final blocks written at once while catching up (FACET_INDEXER_WRITERS). */
    readonly writers: number
    readonly pollInterval: Duration.Duration
    /** A chain's node failing this long makes /health degraded (FACET_HEALTH_NODE_UNREACHABLE_MS). */
    readonly nodeUnreachableAfter: Duration.Duration
  }
  readonly webhooks: {
    readonly pollInterval: Duration.Duration
    /** Deliveries in flight in this process, and per merchant (a dead endpoint holds at most this many). */
    readonly concurrency: number
    readonly perMerchant: number
    readonly timeout: Duration.Duration
    /** Multiplies the retry schedule (tests shrink it). */
    readonly retryScale: number
  }
  /** The ledger export's turns (src/ledger/export-turns.ts): how many stream, how many wait, how slow a reader may be. */
  readonly ledgerExport: {
    /** Exports streaming at once in this process (each holds a database connection). */
    readonly atOnce: number
    /** Exports waiting for a turn, all merchants together; one more is refused (503, Retry-After). */
    readonly waiting: number
    /** A reader that takes fewer bytes a second than this on average is cut off (src/ledger/reader-pace.ts). */
    readonly minBytesPerSecond: number
    /** Its slack: a reader may fall this long at the minimum pace behind it (or bank as much ahead) before the cut. */
    readonly paceWindow: Duration.Duration
  }
}

const port = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({
      message: `${name} must be a TCP port between 0 and 65535`,
      validation: (n) => n >= 0 && n <= 65535
    })
  )

const positiveNumber = (name: string, fallback: number) =>
  Config.number(name).pipe(
    Config.withDefault(fallback),
    Config.validate({
      message: `${name} must be a number greater than 0`,
      validation: (n) => Number.isFinite(n) && n > 0
    })
  )

const wholeNumber = (name: string, fallback: number, least: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({
      message: `${name} must be a whole number, ${least} or more`,
      validation: (n) => n >= least
    })
  )

const httpUrl = (name: string) =>
  Config.string(name).pipe(
    Config.validate({
      message: `${name} must be an absolute http(s) URL such as https://pay.example.com`,
      validation: (value) => {
        try {
          const url = new URL(value)
          return url.protocol === "http:" || url.protocol === "https:"
        } catch {
          return false
        }
      }
    }),
    Config.map((value) => value.replace(/\/+$/, ""))
  )

const postgresUrl = Config.redacted("DATABASE_URL").pipe(
  Config.validate({
    message: "DATABASE_URL must be a postgres:// or postgresql:// connection URL",
    validation: (value) => /^postgres(ql)?:\/\//.test(Redacted.value(value))
  })
)

export const appConfig: Config.Config<AppConfigShape> = Config.all({
  port: port("PORT", 8080),
  dataDir: Config.string("FACET_DATA_DIR").pipe(
    Config.withDefault(".facet"),
    Config.map((dir) => path.resolve(dir))
  ),
  databaseUrl: Config.option(postgresUrl),
  baseUrl: Config.option(httpUrl("FACET_BASE_URL")),
  network: Config.literal("devnet", "mainnet")("FACET_NETWORK").pipe(Config.withDefault("devnet" as const)),
  rateLimitPerSecond: positiveNumber("FACET_RATE_LIMIT_PER_SECOND", 20),
  rateLimitBurst: positiveNumber("FACET_RATE_LIMIT_BURST", 60),
  paymentLinkVisitsPerMinute: positiveNumber("FACET_PAYMENT_LINK_VISITS_PER_MINUTE", 60),
  paymentLinkVisitsPerClientPerMinute: positiveNumber("FACET_PAYMENT_LINK_VISITS_PER_CLIENT_PER_MINUTE", 10),
  maxBodyBytes: positiveNumber("FACET_MAX_BODY_BYTES", 1_048_576),
  consoleTokenTtlHours: positiveNumber("FACET_CONSOLE_TOKEN_TTL_HOURS", 24),
  consoleBaseUrl: Config.option(httpUrl("FACET_CONSOLE_BASE_URL")),
  masterSeed: Config.option(Config.redacted("FACET_MASTER_SEED")),
  masterSeedFile: Config.option(Config.string("FACET_MASTER_SEED_FILE").pipe(Config.map((file) => path.resolve(file)))),
  orderExpiryIntervalMs: positiveNumber("FACET_ORDER_EXPIRY_INTERVAL_MS", 1000),
  indexerChains: Config.string("FACET_INDEXER_CHAINS").pipe(
    Config.withDefault("TRC20,BEP20,SOLANA"),
    Config.map((value) =>
      value.trim().toLowerCase() === "none"
        ? []
        : value
            .split(",")
            .map((c) => c.trim().toUpperCase())
            .filter((c) => c !== "")
    ),
    Config.validate({
      message: "FACET_INDEXER_CHAINS must list TRC20, BEP20, SOLANA (comma-separated) or be none",
      validation: (chains) => chains.every((c) => c === "TRC20" || c === "BEP20" || c === "SOLANA")
    }),
    Config.map((chains) => chains.flatMap((c) => (c === "TRC20" || c === "BEP20" || c === "SOLANA" ? [c] : [])))
  ),
  indexerBatch: positiveNumber("FACET_INDEXER_BATCH", 50),
  indexerPrefetch: Config.integer("FACET_INDEXER_PREFETCH").pipe(
    Config.withDefault(4),
    Config.validate({
      message: "FACET_INDEXER_PREFETCH must be a whole number of batches, 0 or more",
      validation: (n) => n >= 0
    })
  ),
  indexerWriters: Config.integer("FACET_INDEXER_WRITERS").pipe(
    Config.withDefault(2),
    // each writer holds one of the pool's 20 connections while it writes, per chain indexed in the process
    Config.validate({
      message: "FACET_INDEXER_WRITERS must be a whole number of batches from 1 to 4",
      validation: (n) => n >= 1 && n <= 4
    })
  ),
  indexerPollMs: positiveNumber("FACET_INDEXER_POLL_MS", 500),
  nodeUnreachableMs: positiveNumber("FACET_HEALTH_NODE_UNREACHABLE_MS", 60_000),
  webhookPollMs: positiveNumber("FACET_WEBHOOK_POLL_MS", 250),
  webhookConcurrency: positiveNumber("FACET_WEBHOOK_CONCURRENCY", 16),
  webhookPerMerchant: positiveNumber("FACET_WEBHOOK_PER_MERCHANT", 2),
  webhookTimeoutMs: positiveNumber("FACET_WEBHOOK_TIMEOUT_MS", 10_000),
  webhookRetryScale: positiveNumber("FACET_WEBHOOK_RETRY_SCALE", 1),
  ledgerExportsAtOnce: wholeNumber("FACET_LEDGER_EXPORTS_AT_ONCE", 2, 1),
  ledgerExportsWaiting: wholeNumber("FACET_LEDGER_EXPORTS_WAITING", 16, 0),
  ledgerExportMinBytesPerSecond: wholeNumber("FACET_LEDGER_EXPORT_MIN_BYTES_PER_SECOND", 65_536, 1),
  ledgerExportPaceWindowSeconds: positiveNumber("FACET_LEDGER_EXPORT_PACE_WINDOW_SECONDS", 60)
}).pipe(
  Config.map((raw) => {
    const baseUrl = Option.getOrElse(raw.baseUrl, () => `http://localhost:${raw.port}`)
    return {
      port: raw.port,
      dataDir: raw.dataDir,
      databaseUrl: raw.databaseUrl,
      baseUrl,
      network: raw.network,
      rateLimit: { perSecond: raw.rateLimitPerSecond, burst: raw.rateLimitBurst },
      paymentLinkVisitsPerMinute: raw.paymentLinkVisitsPerMinute,
      paymentLinkVisitsPerClientPerMinute: raw.paymentLinkVisitsPerClientPerMinute,
      maxBodyBytes: Math.floor(raw.maxBodyBytes),
      consoleTokenTtl: Duration.hours(raw.consoleTokenTtlHours),
      consoleBaseUrl: Option.getOrElse(raw.consoleBaseUrl, () => `${baseUrl}/console`),
      masterSeed: raw.masterSeed,
      masterSeedFile: raw.masterSeedFile,
      orderExpiryInterval: Duration.millis(raw.orderExpiryIntervalMs),
      indexer: {
        chains: raw.indexerChains,
        batchSize: Math.max(1, Math.floor(raw.indexerBatch)),
        prefetchBatches: raw.indexerPrefetch,
        writers: raw.indexerWriters,
        pollInterval: Duration.millis(raw.indexerPollMs),
        nodeUnreachableAfter: Duration.millis(raw.nodeUnreachableMs)
      },
      webhooks: {
        pollInterval: Duration.millis(raw.webhookPollMs),
        concurrency: Math.max(1, Math.floor(raw.webhookConcurrency)),
        perMerchant: Math.max(1, Math.floor(raw.webhookPerMerchant)),
        timeout: Duration.millis(raw.webhookTimeoutMs),
        retryScale: raw.webhookRetryScale
      },
      ledgerExport: {
        atOnce: raw.ledgerExportsAtOnce,
        waiting: raw.ledgerExportsWaiting,
        minBytesPerSecond: raw.ledgerExportMinBytesPerSecond,
        paceWindow: Duration.millis(raw.ledgerExportPaceWindowSeconds * 1000)
      }
    }
  })
)

/** Turns a configuration failure into one readable line per bad variable. */
export const describeConfigError = (error: ConfigError.ConfigError): string =>
  ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left, right) => `${left}\n${right}`,
    orCase: (_, left, right) => `${left}\n${right}`,
    invalidDataCase: (_, p, message) => `${p.join(".")}: ${message}`,
    missingDataCase: (_, p, message) => `${p.join(".")}: ${message}`,
    sourceUnavailableCase: (_, p, message) => `${p.join(".")}: ${message}`,
    unsupportedCase: (_, p, message) => `${p.join(".")}: ${message}`
  })

export class AppConfig extends Context.Tag("facet/AppConfig")<AppConfig, AppConfigShape>() {}

/** The configuration from the environment. */
export const AppConfigLive = Layer.effect(AppConfig, appConfig)

/** For tests and tools that build the configuration in code. */
export const makeAppConfigLive = (overrides: Partial<AppConfigShape>) =>
  Layer.effect(
    AppConfig,
    Effect.map(appConfig, (loaded) => ({ ...loaded, ...overrides }))
  )

export const loadAppConfig = Effect.either(appConfig).pipe(Effect.map(Either.mapLeft(describeConfigError)))
