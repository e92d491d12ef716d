import { RunnerAddress, SingleRunner } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option } from "effect"
import * as os from "node:os"
import { AppConfig, type AppConfigShape } from "./config.js"

type IndexedChain = AppConfigShape["indexer"]["chains"][number]

const INDEXED_CHAINS: ReadonlyArray<IndexedChain> = ["TRC20", "BEP20", "SOLANA"]

/**
 * A chain's indexer singleton lives in a shard group of its own, joined only by the runners that index
 * the chain (FACET_INDEXER_CHAINS): a runner that does not index it is never handed it.
 */
export const indexerShardGroup = (chain: IndexedChain) => `indexer-${chain}`

/** The wallet actors' group (the package's default). */
const WALLETS_GROUP = "default"

/**
 * Every runner must know every group: the package numbers a group's shard locks by its place in this
 * list, so it is the same list everywhere ("default" sorts first and keeps the numbers it always had).
 */
const ALL_GROUPS = [WALLETS_GROUP, ...INDEXED_CHAINS.map(indexerShardGroup)]

/** The cluster's settings (FACET_CLUSTER_*), for the runner and for what waits on its timings. */
export const clusterSettings = Config.all({
  address: Config.option(
    Config.string("FACET_CLUSTER_RUNNER_ADDRESS").pipe(
      Config.validate({
        message: "FACET_CLUSTER_RUNNER_ADDRESS must be host:port",
        validation: (v) => /^[^:\s]+:\d{1,5}$/.test(v)
      })
    )
  ),
  pollMs: Config.integer("FACET_CLUSTER_POLL_MS").pipe(Config.withDefault(250)),
  lockMs: Config.integer("FACET_CLUSTER_SHARD_LOCK_MS").pipe(Config.withDefault(10_000))
})

/**
 * The advisory lock (two-key form: its own key space, apart from the package's one-key shard locks and
 * our migrations') held while a runner builds the cluster's storage.
 */
const CLUSTER_SETUP_LOCK = [0x66616365, 2] as const

/**
 * Builds the cluster layer under an advisory lock. The package creates its tables on start-up with
 * `CREATE TABLE IF NOT EXISTS`, which is not safe to run twice at once: two runners started together on
 * an empty database collided (`duplicate key … pg_type_typname_nsp_index`) and one of them exited.
 * The lock is taken on a connection of its own and given back as soon as the layer is built.
 */
const builtOneAtATime = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const scope = yield* Effect.scope
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* sql.reserve
          yield* conn.executeRaw("SELECT pg_advisory_lock($1, $2)", [...CLUSTER_SETUP_LOCK])
          return yield* Layer.buildWithScope(layer, scope).pipe(
            Effect.ensuring(
              conn.executeRaw("SELECT pg_advisory_unlock($1, $2)", [...CLUSTER_SETUP_LOCK]).pipe(Effect.ignore)
            )
          )
        })
      )
    })
  )

/**
 * The cluster over our PostgreSQL (SqlMessageStorage, SqlRunnerStorage): the wallet actors and each
 * chain's indexer singleton run on it. Without FACET_CLUSTER_RUNNER_ADDRESS: one runner holding every
 * shard it takes part in. With it (`host:port`, reachable by the other runners): a socket runner sharing
 * the shards with every other runner on the same database; a dead runner's shards (its actors, its
 * indexers) move to the living ones once its runner row and shard locks expire (FACET_CLUSTER_SHARD_LOCK_MS).
 *
 * Timings are chosen, not defaulted (KNOWN-GROUND.md): the package polls for new messages every 10 s and
 * keeps a dead runner for 35 s by default, which would make a sweep wait 10 s to start and a takeover
 * half a minute. Here a message or a singleton starts within a second on one runner, and a dead runner's
 * shards move after about the lock time (10 s): each refresh must then answer within a quarter of it, so
 * a database that stalls longer makes a runner stop its actors and singletons until it answers again.
 * Not 5 s: with the database down, a runner whose lock refresh had failed (under 1.25 s on a busy machine)
 * did not finish stopping (http/resilience.test.ts hung in its teardown 4 times in 4 under load; with 10 s,
 * 0 in 3). Lower it where a takeover must be faster and the database is reliable.
 *
 * `wallets: false` (`npm run indexer`): the runner takes part only in its chains' indexer groups, never
 * in the wallet actors'; in single-runner mode it registers under an address of its own (one per host and
 * chains), so it never stands in for the service's runner.
 */
export const makeClusterLive = (role: { readonly wallets: boolean }) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const raw = yield* clusterSettings
      const groups = [...(role.wallets ? [WALLETS_GROUP] : []), ...config.indexer.chains.map(indexerShardGroup)]
      const shardingConfig = {
        entityMessagePollInterval: Duration.millis(raw.pollMs),
        entityReplyPollInterval: Duration.millis(raw.pollMs),
        refreshAssignmentsInterval: Duration.millis(Math.max(raw.pollMs * 2, 500)),
        shardLockExpiration: Duration.millis(raw.lockMs),
        shardLockRefreshInterval: Duration.millis(Math.max(Math.floor(raw.lockMs / 4), 250)),
        availableShardGroups: ALL_GROUPS,
        assignedShardGroups: groups,
        // a sweep waits for finality inside its handler: an actor is never idle while it does
        entityMaxIdleTime: Duration.minutes(5)
      }
      return builtOneAtATime(
        Option.match(raw.address, {
          onNone: () =>
            SingleRunner.layer({
              runnerStorage: "sql",
              shardingConfig: role.wallets
                ? shardingConfig
                : {
                    ...shardingConfig,
                    runnerAddress: Option.some(
                      RunnerAddress.make(`indexer-${config.indexer.chains.join("-")}.${os.hostname()}`, 0)
                    )
                  }
            }),
          onSome: (address) => {
            const [host = "localhost", port = "0"] = address.split(":")
            return NodeClusterSocket.layer({
              storage: "sql",
              runnerHealth: "ping",
              shardingConfig: { ...shardingConfig, runnerAddress: Option.some(RunnerAddress.make(host, Number(port))) }
            })
          }
        })
      )
    })
  )

/** The service's runner: the wallet actors and the indexers of FACET_INDEXER_CHAINS. */
export const ClusterLive = makeClusterLive({ wallets: true })

/** How long the cluster takes to hand a dead runner's shards to another: its shard lock time. */
export const shardLockTime = Effect.map(clusterSettings, (raw) => Duration.millis(raw.lockMs))
