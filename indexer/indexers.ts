import { Sharding } from "@effect/cluster"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { indexerShardGroup, shardLockTime } from "../src/cluster.js"
import { AppConfig } from "../src/config.js"
import { IndexerStore } from "../src/stores/indexer-store.js"
import { runChainIndexer } from "./chain-indexer.js"
import { refreshStandby, reportStandby, reportStatus, standbyStatus } from "../src/indexing/indexer-status.js"
import { followingBudget } from "./request-budget.js"
import { AssetStore } from "../src/stores/asset-store.js"
import { TransactionStore } from "../src/stores/transaction-store.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { ChainIdentityStore } from "../src/stores/chain-identity-store.js"
import { AttributionStore } from "./attribution-store.js"

/**
 * Each configured chain's indexer (FACET_INDEXER_CHAINS) as a cluster singleton, `indexer/<CHAIN>`: one
 * runner of all those on the database that index the chain runs it, and when that runner dies another
 * starts it once the cluster has moved its shard. A halted indexer (a fork deeper than finality) stays
 * halted where it runs and says so loudly; the others go on.
 *
 * Every runner reports each of its chains for /health and /metrics: the one running it, its progress; the
 * others `standby`, with the stored cursor and the holder's name read from the database every 2 s: ready
 * once some runner has stored where the chain starts, degraded only if nobody has moved the cursor for
 * FACET_HEALTH_NODE_UNREACHABLE_MS (the holder halted or stuck, or no runner runs it).
 */
export const IndexersLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const clients = yield* ChainClients
    const sharding = yield* Sharding.Sharding
    const indexerStore = yield* IndexerStore
    // a runner another took a chain from waits this long for the cluster to stop it before it takes the chain back
    const retakeAfter = Duration.times(yield* shardLockTime, 2)
    for (const chain of config.indexer.chains) {
      const client = clients.get(chain)
      if (Option.isNone(client)) continue
      const startBlock = yield* Config.option(
        Config.string(`FACET_INDEXER_START_${chain}`).pipe(
          Config.validate({
            message: `FACET_INDEXER_START_${chain} must be a block number`,
            validation: (v) => /^\d+$/.test(v)
          }),
          Config.map(BigInt)
        )
      )
      // a chain's own poll interval (FACET_INDEXER_POLL_MS_<CHAIN>): a provider's quota is per chain
      const pollMs = yield* Config.number(`FACET_INDEXER_POLL_MS_${chain}`).pipe(
        Config.validate({
          message: `FACET_INDEXER_POLL_MS_${chain} must be a number greater than 0`,
          validation: (n) => Number.isFinite(n) && n > 0
        }),
        Config.withDefault(Duration.toMillis(config.indexer.pollInterval))
      )
      yield* Effect.logInfo(followingBudget(chain, pollMs, (yield* ChainEndpoints).bep20.traces !== "off").text)
      yield* reportStatus(standbyStatus(chain))
      const stored = indexerStore.standbyView(chain).pipe(
        Effect.flatMap((row) =>
          Option.match(row, {
            onNone: () => Effect.void,
            onSome: (row) => refreshStandby(chain, { cursor: row.cursor, idleMs: row.idle_ms, holder: row.holder })
          })
        ),
        // a database that does not answer is the readiness check's to report
        Effect.ignore
      )
      yield* Effect.forkScoped(Effect.repeat(stored, Schedule.spaced("2 seconds")))

      const indexer = Effect.gen(function* () {
        yield* runChainIndexer(client.value, {
          batchSize: config.indexer.batchSize,
          prefetchBatches: config.indexer.prefetchBatches,
          writers: config.indexer.writers,
          pollInterval: Duration.millis(pollMs),
          retakeAfter,
          startBlock,
          network: config.network
        }).pipe(Effect.catchAll((error) => Effect.logError(`${chain} INDEXER HALTED: ${error.message}`)))
        // halted: it stays so (and reported) while this runner holds the chain
        return yield* Effect.never
      }).pipe(
        // the cluster stopped it here (its shard moved, or this runner is stopping)
        Effect.ensuring(reportStandby(chain, "")),
        Effect.annotateLogs({ chain })
      )
      yield* sharding.registerSingleton(`indexer/${chain}`, indexer, { shardGroup: indexerShardGroup(chain) })
    }
  })
).pipe(
  Layer.provide([
    AssetStore.Default,
    TransactionStore.Default,
    WalletStore.Default,
    IndexerStore.Default,
    ChainIdentityStore.Default,
    AttributionStore.Default
  ])
)
