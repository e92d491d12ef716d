import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { ChainClients } from "../src/chains/chain-clients.js"
import { makeClusterLive } from "../src/cluster.js"
import { IndexersLive } from "./indexers.js"
import { blockArgument, chainArgument, operatorLive } from "./operator-runtime.js"
import { OperatorError, operatorConfig } from "../src/operator/operator-database.js"
import { rescan, rescanUntraced } from "./rescan.js"
import { UntracedBlocks } from "./untraced-blocks.js"

const USAGE = "usage: npm run indexer -- --chain TRC20|BEP20|SOLANA [--rescan-from N [--to M] | --rescan-untraced]"

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
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const chain = chainArgument(args)
  if (chain === undefined) return yield* new OperatorError({ message: USAGE })
  const config = yield* operatorConfig([chain])
  const from = blockArgument(args, "--rescan-from")
  if (args.includes("--rescan-from") && from === undefined) return yield* new OperatorError({ message: USAGE })
  if (args.includes("--rescan-untraced")) {
    const done = yield* Effect.gen(function* () {
      const client = (yield* ChainClients).get(chain)
      if (Option.isNone(client)) return yield* new OperatorError({ message: `no client for ${chain}` })
      return yield* rescanUntraced(client.value, config.indexer.batchSize)
    }).pipe(Effect.provide(UntracedBlocks.Default), Effect.provide(operatorLive(config)))
    console.log(JSON.stringify(done))
    if (done.stillUntraced > 0) process.exitCode = 1
    return
  }
  if (from !== undefined) {
    const done = yield* Effect.gen(function* () {
      const client = (yield* ChainClients).get(chain)
      if (Option.isNone(client)) return yield* new OperatorError({ message: `no client for ${chain}` })
      return yield* rescan(client.value, from, blockArgument(args, "--to"), config.indexer.batchSize)
    }).pipe(Effect.provide(operatorLive(config)))
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
  Effect.catchTags({
    OperatorError: (error) =>
      Effect.sync(() => {
        console.error(error.message)
        process.exitCode = 2
      }),
    RescanRefused: (error) =>
      Effect.sync(() => {
        console.error(error.message)
        process.exitCode = 1
      }),
    // a rescan that could not read a block says where it stopped and why, without a stack trace
    ChainRpcError: (error) =>
      Effect.sync(() => {
        console.error(error.message)
        process.exitCode = 1
      })
  })
)

NodeRuntime.runMain(main)
