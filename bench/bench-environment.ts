import { Effect, Layer, Option, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeCoreLive } from "../src/app.js"
import { ChainEndpoints } from "../src/chains/chain-endpoints.js"
import { AppConfig, appConfig } from "../src/config.js"

/**
 * What the benchmarks run on: the service's own layers over PostgreSQL (DATABASE_URL, or an embedded
 * one in a throw-away directory), with the background workers' chains turned off (or only those named:
 * their indexers run in this process). The endpoints may be the devnets (`DevnetsLive`), kept in the
 * throw-away data directory.
 */
export const benchCore = <E, R>(
  chains: "none" | ReadonlyArray<"TRC20" | "BEP20" | "SOLANA">,
  endpoints: Layer.Layer<ChainEndpoints, E, R>
) =>
  makeCoreLive(endpoints).pipe(
    Layer.provideMerge(
      Layer.scoped(
        AppConfig,
        Effect.gen(function* () {
          const loaded = yield* Effect.orDie(appConfig)
          // a throw-away embedded PostgreSQL lives in a temp dir removed when the benchmark ends
          const dataDir = Option.isSome(loaded.databaseUrl)
            ? loaded.dataDir
            : yield* Effect.acquireRelease(
                Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "facet-bench-"))),
                (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
              )
          return {
            ...loaded,
            dataDir,
            masterSeed: Option.some(Redacted.make("test test test test test test test test test test test junk")),
            masterSeedFile: Option.none(),
            indexer: { ...loaded.indexer, chains: chains === "none" ? [] : chains }
          }
        })
      )
    )
  )

export const noChains = Layer.succeed(ChainEndpoints, {
  bep20: { rpcUrl: "http://127.0.0.1:9", chainId: 31337, tokens: new Map(), confirmations: 1, traces: "off" },
  tron: { url: "http://127.0.0.1:9", tokens: new Map(), confirmations: 1 },
  solana: { rpcUrl: "http://127.0.0.1:9", tokens: new Map() }
})

export const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** The machine a figure was measured on: the first line of a bench's output. */
export const machine = () =>
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`

/** The 1, 5 and 15 minute load averages now: a machine shared with other work shows in them. */
export const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")
