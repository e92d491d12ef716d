import { Config, Effect, Layer, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { AppConfig } from "../src/config.js"
import { runChainIndexer } from "./chain-indexer.js"
import { reportStatus, startingStatus } from "./indexer-status.js"

/**
 * One fiber per configured chain (FACET_INDEXER_CHAINS), each its chain's indexer. A halted indexer (a
 * fork deeper than finality) stays halted and says so loudly; the others go on.
 */
export const IndexersLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const clients = yield* ChainClients
    for (const chain of config.indexer.chains) {
      const client = clients.get(chain)
      if (Option.isNone(client)) continue
      // /health is not ready until this chain's indexer has stored where it starts
      yield* reportStatus(startingStatus(chain))
      const startBlock = yield* Config.option(
        Config.string(`FACET_INDEXER_START_${chain}`).pipe(
          Config.validate({ message: `FACET_INDEXER_START_${chain} must be a block number`, validation: (v) => /^\d+$/.test(v) }),
          Config.map(BigInt)
        )
      )
      yield* Effect.forkScoped(
        runChainIndexer(client.value, {
          batchSize: config.indexer.batchSize,
          pollInterval: config.indexer.pollInterval,
          leaseTtl: config.indexer.leaseTtl,
          startBlock,
          network: config.network
        }).pipe(
          Effect.catchAll((error) => Effect.logError(`${chain} INDEXER HALTED: ${error.message}`)),
          Effect.annotateLogs({ chain })
        )
      )
    }
  })
)
