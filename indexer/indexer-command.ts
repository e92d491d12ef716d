import { Command, Options } from "@effect/cli"
import { Effect, Layer, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { makeClusterLive } from "../src/cluster.js"
import { IndexersLive } from "./indexers.js"
import { chainOption, operatorLive } from "./operator-runtime.js"
import { failed, parsedOption, refused, unreachedAsFailure } from "../src/operator/cli.js"
import { operatorConfig } from "../src/operator/operator-database.js"
import { rescan, rescanUntraced } from "./rescan.js"
import { UntracedBlockStore } from "../src/stores/untraced-block-store.js"

/**
 * `npm run indexer -- --chain BEP20`: one chain's indexer in a process of its own, against the same
 * database (DATABASE_URL, or the embedded PostgreSQL of the service running in FACET_DATA_DIR). The
 * process is a cluster runner that takes part in that chain's indexer alone (never in the wallet actors):
 * the cluster runs the chain on one of the runners that index it, so while the service (or another
 * `npm run indexer`) indexes it too, one of them does and the other stands by, and the chain moves to the
 * living one when the other stops or dies. Where the service's runners are socket runners
 * (FACET_CLUSTER_RUNNER_ADDRESS), give this one an address of its own the same way, or they cannot reach
 * it and it stands by for good.
 *
 * `--rescan-from N [--to M]`: re-reads final blocks N–M (M: as far as both finality and the indexer
 * have come) and adds what was missed, credited and announced; what is recorded already stays as it is.
 * `--rescan-untraced`: the same for every block recorded as untraced (its contract calls could not be
 * traced), run against a node that can trace them (e.g. FACET_BEP20_RPC_URL=<archive node>).
 * Exit codes (docs/operating/cli.md): 1 also when a rescan stops on a node error, is refused, or leaves
 * blocks untraced.
 */

const blockNumber = (name: string) =>
  parsedOption(name, "N", "a block number", (value) =>
    /^\d+$/.test(value) ? Option.some(BigInt(value)) : Option.none()
  ).pipe(Options.optional)

export const indexerCommand = Command.make(
  "indexer",
  {
    chain: chainOption.pipe(Options.withDescription("the chain this process indexes (or rescans)")),
    rescanFrom: blockNumber("rescan-from").pipe(
      Options.withDescription("re-read final blocks from N, add what was missed, and exit")
    ),
    to: blockNumber("to").pipe(Options.withDescription("with --rescan-from: the last block to re-read")),
    rescanUntraced: Options.boolean("rescan-untraced").pipe(
      Options.withDescription("re-read every block recorded as untraced, through a node that can trace it, and exit")
    )
  },
  ({ chain, rescanFrom, to, rescanUntraced: untraced }) =>
    Effect.gen(function* () {
      if (Option.isSome(to) && Option.isNone(rescanFrom)) return yield* refused("--to goes with --rescan-from")
      if (untraced && Option.isSome(rescanFrom))
        return yield* refused("--rescan-from and --rescan-untraced: one or the other")
      const config = yield* operatorConfig([chain])
      const client = Effect.flatMap(ChainClients, (clients) =>
        Option.match(clients.get(chain), {
          onNone: () => Effect.fail(failed(`no client for ${chain}`)),
          onSome: Effect.succeed
        })
      )
      if (untraced) {
        const done = yield* Effect.flatMap(client, (c) => rescanUntraced(c, config.indexer.batchSize)).pipe(
          Effect.provide(UntracedBlockStore.Default),
          Effect.provide(operatorLive(config))
        )
        console.log(JSON.stringify(done))
        if (done.stillUntraced > 0) return yield* failed(`${done.stillUntraced} blocks are still untraced`)
        return
      }
      if (Option.isSome(rescanFrom)) {
        const done = yield* Effect.flatMap(client, (c) =>
          rescan(c, rescanFrom.value, Option.getOrUndefined(to), config.indexer.batchSize)
        ).pipe(Effect.provide(operatorLive(config)))
        console.log(
          JSON.stringify({ chain: done.chain, from: done.from.toString(), to: done.to.toString(), added: done.added })
        )
        return
      }
      yield* Effect.logInfo(`indexing ${chain} in this process (${config.network}) when the cluster hands it the chain`)
      return yield* Layer.launch(
        IndexersLive.pipe(Layer.provide(makeClusterLive({ wallets: false })), Layer.provideMerge(operatorLive(config)))
      )
    }).pipe(
      unreachedAsFailure,
      // a rescan that could not read a block says where it stopped and why, without a stack trace
      Effect.catchTags({
        RescanRefused: (error) => failed(error.message),
        ChainRpcError: (error) => failed(error.message)
      })
    )
).pipe(Command.withDescription("one chain's indexer in a process of its own, or a rescan of its blocks"))
