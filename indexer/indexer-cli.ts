import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { IndexersLive } from "./indexers.js"
import { blockArgument, chainArgument, OperatorError, operatorConfig, operatorLive } from "./operator-runtime.js"
import { rescan } from "./rescan.js"

const USAGE = "usage: npm run indexer -- --chain TRC20|BEP20|SOLANA [--rescan-from N [--to M]]"

/**
 * `npm run indexer -- --chain BEP20`: one chain's indexer in a process of its own, against the same
 * database (DATABASE_URL, or the embedded PostgreSQL of the service running in FACET_DATA_DIR). The
 * chain's lease makes it wait while another process indexes that chain, and take over when it stops.
 *
 * `--rescan-from N [--to M]`: re-reads final blocks N–M (M: as far as both finality and the indexer
 * have come) and adds what was missed, credited and announced; what is recorded already stays as it is.
 */
const main = Effect.gen(function*() {
  const args = process.argv.slice(2)
  const chain = chainArgument(args)
  if (chain === undefined) return yield* new OperatorError({ message: USAGE })
  const config = yield* operatorConfig([chain])
  const from = blockArgument(args, "--rescan-from")
  if (args.includes("--rescan-from") && from === undefined) return yield* new OperatorError({ message: USAGE })
  if (from !== undefined) {
    const done = yield* Effect.gen(function*() {
      const client = (yield* ChainClients).get(chain)
      if (Option.isNone(client)) return yield* new OperatorError({ message: `no client for ${chain}` })
      return yield* rescan(client.value, from, blockArgument(args, "--to"), config.indexer.batchSize)
    }).pipe(Effect.provide(operatorLive(config)))
    console.log(JSON.stringify({ chain: done.chain, from: done.from.toString(), to: done.to.toString(), added: done.added }))
    return
  }
  yield* Effect.logInfo(`indexing ${chain} in this process (${config.network})`)
  return yield* Layer.launch(IndexersLive.pipe(Layer.provide(operatorLive(config))))
}).pipe(
  Effect.catchTags({
    OperatorError: (error) => Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 2
    }),
    RescanRefused: (error) => Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 1
    })
  })
)

NodeRuntime.runMain(main)
