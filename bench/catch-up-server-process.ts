import { Effect, Schema } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { PaidTotals } from "./catch-up-paid.js"

export class ChainServerError extends Schema.TaggedError<ChainServerError>()("ChainServerError", {
  message: Schema.String
}) {}

const Listening = Schema.parseJson(Schema.Struct({ url: Schema.String }))
export const ServerStats = Schema.Struct({
  httpRequests: Schema.Number,
  unknown: Schema.Number,
  cpuMs: Schema.Number,
  calls: Schema.Record({ key: Schema.String, value: Schema.Number })
})
export type ServerStats = typeof ServerStats.Type

/**
 * The bench chain server (chain-server.ts) in a process of its own, so making blocks does not take the
 * indexer's event loop; stopped (by its own pid) when the scope closes, and by itself if this process dies.
 */
export const startChainServerProcess = (options: {
  readonly head: number
  readonly watched: number
  readonly seed: number
  readonly latencyMs: number
}) =>
  Effect.gen(function* () {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(
          process.execPath,
          [
            "--import",
            "tsx",
            path.join(import.meta.dirname, "chain-server.ts"),
            "--head",
            String(options.head),
            "--watched",
            String(options.watched),
            "--seed",
            String(options.seed),
            "--latency",
            String(options.latencyMs),
            // it exits when this process's end of its stdin closes, however this one ends
            "--die-with-parent",
            "true"
          ],
          { stdio: ["pipe", "pipe", "inherit"] }
        )
      ),
      (started) =>
        Effect.async<void>((resume) => {
          if (started.exitCode !== null || started.signalCode !== null) return resume(Effect.void)
          started.once("exit", () => resume(Effect.void))
          started.kill("SIGTERM")
        })
    )
    // its first line says where it listens
    const line = yield* Effect.async<string, ChainServerError>((resume) => {
      const lines = createInterface({ input: child.stdout })
      const exited = (code: number | null) =>
        resume(Effect.fail(new ChainServerError({ message: `the chain server exited (${code}) before it listened` })))
      child.once("exit", exited)
      lines.once("line", (text) => {
        child.off("exit", exited)
        lines.close()
        resume(Effect.succeed(text))
      })
    })
    const { url } = yield* Schema.decodeUnknown(Listening)(line).pipe(
      Effect.mapError(() => new ChainServerError({ message: `the chain server said ${line}, not where it listens` }))
    )
    const getJson = <A, I>(pathAndQuery: string, schema: Schema.Schema<A, I>) =>
      Effect.tryPromise({
        try: () => fetch(`${url}${pathAndQuery}`).then((response) => response.json()),
        catch: (cause) => new ChainServerError({ message: `${pathAndQuery}: ${String(cause)}` })
      }).pipe(
        Effect.flatMap((body) =>
          Schema.decodeUnknown(schema)(body).pipe(
            Effect.mapError((e) => new ChainServerError({ message: `${pathAndQuery}: ${e.message}` }))
          )
        )
      )
    return {
      tronUrl: url,
      bscUrl: `${url}/bsc`,
      paid: (chain: "TRC20" | "BEP20", from: number, to: number) =>
        getJson(`/bench/paid?chain=${chain}&from=${from}&to=${to}`, PaidTotals),
      stats: getJson("/bench/stats", ServerStats)
    }
  })
