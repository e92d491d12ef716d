import { Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import { ChainSettingsLive } from "../src/assets/chain-settings.js"
import { ChainClientsLive } from "../src/chains/chain-clients.js"
import { ChainEndpoints, confirmationsConfig, MainnetEndpointsLive } from "../src/chains/chain-endpoints.js"
import { AppConfig, type AppConfigShape } from "../src/config.js"
import { DatabaseLive } from "../src/database/database.js"
import { runMigrations } from "../src/database/migrator.js"
import { devnetViaConfig, reachedThrough } from "../src/devnet/devnet-via.js"
import { devnetFilePath, DevnetFile } from "../src/devnet/devnets.js"
import { isHexAddress } from "../src/keys/address-encoding.js"
import { OperatorMasterSeedLive } from "../src/keys/master-seed.js"
import { LocalSignerLive } from "../src/keys/signer.js"
import { StoresLive } from "../src/stores/stores-layer.js"
import { AttributionStore } from "./attribution-store.js"
import { IndexerStatusLive } from "../src/indexing/indexer-status.js"
import { parsedOption } from "../src/operator/cli.js"
import { OperatorError } from "../src/operator/operator-database.js"

/**
 * What the operator commands (`npm run indexer`, `npm run reconcile`) run on: the service's database
 * (DATABASE_URL, or the embedded PostgreSQL of the service running in FACET_DATA_DIR) and chains (on
 * devnet the endpoints the running service wrote; on mainnet the configuration), without its HTTP server.
 */

/** On devnet: the endpoints the running service wrote; on mainnet: the configuration (`npm run custody -- energy` too). */
export const endpointsFor = (
  dataDir: string,
  network: "devnet" | "mainnet"
): Layer.Layer<ChainEndpoints, OperatorError, AppConfig> =>
  network === "mainnet"
    ? MainnetEndpointsLive.pipe(
        Layer.catchAll((error) => Layer.fail(new OperatorError({ message: `mainnet endpoints: ${String(error)}` })))
      )
    : Layer.effect(
        ChainEndpoints,
        Effect.gen(function* () {
          const text = yield* Effect.try(() => fs.readFileSync(devnetFilePath(dataDir), "utf8")).pipe(
            Effect.orElseFail(
              () =>
                new OperatorError({
                  message: `no running devnet in ${dataDir}: start the service (npm start) first, or use FACET_NETWORK=mainnet`
                })
            )
          )
          const file = yield* Schema.decodeUnknown(Schema.parseJson(DevnetFile))(text).pipe(
            Effect.mapError(() => new OperatorError({ message: `${devnetFilePath(dataDir)} is not a devnet file` }))
          )
          // the same finality as the service that runs the devnets (FACET_CONFIRMATIONS_*)
          const confirmations = yield* confirmationsConfig("devnet").pipe(
            Effect.mapError((error) => new OperatorError({ message: `confirmations: ${String(error)}` }))
          )
          // the nodes the service reaches the devnets through, where it is given them (FACET_DEVNET_VIA_<CHAIN>)
          const via = yield* devnetViaConfig.pipe(
            Effect.mapError((error) => new OperatorError({ message: String(error) }))
          )
          return yield* reachedThrough(
            {
              bep20: {
                rpcUrl: file.bep20.rpcUrl,
                chainId: file.bep20.chainId,
                tokens: new Map(
                  Object.entries(file.bep20.tokens).flatMap(([c, a]) => (isHexAddress(a) ? [[c, a] as const] : []))
                ),
                confirmations: confirmations.bep20,
                traces: "callTracer"
              },
              tron: {
                url: file.tron.url,
                tokens: new Map(Object.entries(file.tron.tokens)),
                confirmations: confirmations.tron
              },
              solana: {
                rpcUrl: file.solana.rpcUrl,
                tokens: new Map(Object.entries(file.solana.tokens).map(([c, mint]) => [c, { mint, decimals: 6 }]))
              }
            },
            via
          )
        })
      )

/** Database (migrated) with the stores, keys, chain clients and the attribution store, for an operator command. */
export const operatorLive = (config: AppConfigShape) => {
  const ConfigLive = Layer.succeed(AppConfig, config)
  const Base = Layer.mergeAll(LocalSignerLive.pipe(Layer.provide(OperatorMasterSeedLive)), DatabaseLive).pipe(
    Layer.provideMerge(ConfigLive)
  )
  const Chains = Layer.mergeAll(ChainClientsLive, ChainSettingsLive).pipe(
    Layer.provideMerge(endpointsFor(config.dataDir, config.network))
  )
  return Layer.mergeAll(AttributionStore.Default, IndexerStatusLive).pipe(
    Layer.provideMerge(Chains),
    Layer.provideMerge(Layer.effectDiscard(runMigrations())),
    Layer.provideMerge(StoresLive),
    Layer.provideMerge(Base)
  )
}

const CHAINS = ["TRC20", "BEP20", "SOLANA"] as const

/** `--chain X` of an operator command: a chain we index (any case); another is a usage error naming the flag. */
export const chainOption = parsedOption("chain", "TRC20|BEP20|SOLANA", "TRC20, BEP20 or SOLANA", (value) =>
  Option.fromNullable(CHAINS.find((c) => c === value.toUpperCase()))
)

export const ALL_CHAINS: ReadonlyArray<(typeof CHAINS)[number]> = CHAINS
