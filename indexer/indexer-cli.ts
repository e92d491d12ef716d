import { isHexAddress } from "../src/keys/address-encoding.js"
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import { ChainClientsLive } from "../src/chains/chain-clients.js"
import { ChainEndpoints, MainnetEndpointsLive } from "../src/chains/chain-endpoints.js"
import { AppConfig, type AppConfigShape, loadAppConfig } from "../src/config.js"
import { DatabaseLive } from "../src/database/database.js"
import { runningEmbeddedUrl } from "../src/database/embedded-postgres.js"
import { runMigrations } from "../src/database/migrator.js"
import { devnetFilePath, DevnetFile } from "../src/devnet/devnets.js"
import { MasterSeedLive } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { Orders } from "../src/orders/orders.js"
import { AssetCatalog } from "../src/assets/asset-catalog.js"
import { ChainSettingsLive } from "../src/assets/chain-settings.js"
import { WebhookOutbox } from "../src/webhooks/outbox.js"
import { AttributionStore } from "./attribution-store.js"
import { IndexerStatus } from "./indexer-status.js"
import { IndexersLive } from "./indexers.js"

const USAGE = "usage: npm run indexer -- --chain TRC20|BEP20|SOLANA"


/** On devnet: the endpoints the running service wrote; on mainnet: the configuration. */
const endpointsFor = (dataDir: string, network: "devnet" | "mainnet"): Layer.Layer<ChainEndpoints, unknown, AppConfig> =>
  network === "mainnet"
    ? MainnetEndpointsLive
    : Layer.effect(
      ChainEndpoints,
      Effect.gen(function*() {
        const text = yield* Effect.try(() => fs.readFileSync(devnetFilePath(dataDir), "utf8")).pipe(
          Effect.orElseFail(() => new Error(`no running devnet in ${dataDir}: start the service (npm start) first, or use FACET_NETWORK=mainnet`))
        )
        const file = yield* Schema.decodeUnknown(Schema.parseJson(DevnetFile))(text)
        return {
          bep20: {
            rpcUrl: file.bep20.rpcUrl,
            chainId: file.bep20.chainId,
            tokens: new Map(Object.entries(file.bep20.tokens).flatMap(([c, a]) => (isHexAddress(a) ? [[c, a] as const] : []))),
            confirmations: 3
          },
          tron: { url: file.tron.url, tokens: new Map(Object.entries(file.tron.tokens)), confirmations: 3 },
          solana: { rpcUrl: file.solana.rpcUrl, tokens: new Map(Object.entries(file.solana.tokens).map(([c, mint]) => [c, { mint, decimals: 6 }])) }
        }
      })
    )

/**
 * `npm run indexer -- --chain BEP20`: one chain's indexer in a process of its own, against the same
 * database (DATABASE_URL, or the embedded PostgreSQL of the service running in FACET_DATA_DIR). The
 * chain's lease makes it wait while another process indexes that chain, and take over when it stops.
 */
const main = Effect.gen(function*() {
  const args = process.argv.slice(2)
  const requested = args[args.indexOf("--chain") + 1]?.toUpperCase()
  const chain = requested === "TRC20" || requested === "BEP20" || requested === "SOLANA" ? requested : undefined
  if (args.indexOf("--chain") === -1 || chain === undefined) {
    return yield* Effect.sync(() => {
      console.error(USAGE)
      process.exitCode = 2
    })
  }
  const loaded = yield* loadAppConfig
  if (Either.isLeft(loaded)) return yield* Effect.logError(`invalid configuration:\n${loaded.left}`)
  const databaseUrl = Option.orElse(loaded.right.databaseUrl, () => runningEmbeddedUrl(loaded.right.dataDir))
  if (Option.isNone(databaseUrl)) {
    return yield* Effect.logError(`no database: set DATABASE_URL, or start the service so its embedded PostgreSQL runs in ${loaded.right.dataDir}`)
  }
  const config: AppConfigShape = { ...loaded.right, databaseUrl, indexer: { ...loaded.right.indexer, chains: [chain] } }
  const ConfigLive = Layer.succeed(AppConfig, config)
  const Base = Layer.mergeAll(LocalSignerLive.pipe(Layer.provide(MasterSeedLive)), DatabaseLive).pipe(Layer.provideMerge(ConfigLive))
  const Chains = Layer.mergeAll(ChainClientsLive, ChainSettingsLive).pipe(Layer.provideMerge(endpointsFor(config.dataDir, config.network)))
  const Store = AttributionStore.Default.pipe(
    Layer.provide(Layer.mergeAll(Orders.Default, WebhookOutbox.Default)),
    Layer.provide(AssetCatalog.Default)
  )
  const App = IndexersLive.pipe(
    Layer.provide(Layer.mergeAll(Store, IndexerStatus.layer)),
    Layer.provideMerge(Chains),
    Layer.provideMerge(Layer.effectDiscard(runMigrations())),
    Layer.provideMerge(Base)
  )
  yield* Effect.logInfo(`indexing ${chain} in this process (${config.network})`)
  return yield* Layer.launch(App)
})

NodeRuntime.runMain(main)
