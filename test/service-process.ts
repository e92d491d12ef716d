import { Reactivity } from "@effect/experimental"
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { AppConfigShape } from "../src/config.js"
import { freePort, runningEmbeddedUrl } from "../src/database/embedded-postgres.js"
import { DevnetFile, devnetFilePath, devnetStatePaths } from "../src/devnet/devnets.js"
import { isAlive, readCmdline, waitForExit } from "../src/processes/child-process.js"
import { eventually } from "./webhook-receiver.js"

export interface ServiceProcess {
  readonly pid: number
  readonly url: string
  readonly logFile: string
  /** Everything the process has logged so far. */
  readonly log: () => string
}

/**
 * A throw-away directory for services run as processes, removed afterwards; traversable by the postgres
 * user (as root), so the embedded cluster lives inside and goes with it.
 */
export const processWorkDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
      fs.chmodSync(dir, 0o755)
      return dir
    }),
    // FACET_KEEP_TEST_DIRS=1 keeps it (the service's log, its database and devnets) to look at a failure
    (dir) =>
      Effect.sync(() =>
        process.env.FACET_KEEP_TEST_DIRS === "1"
          ? console.log(`kept ${dir}`)
          : fs.rmSync(dir, { recursive: true, force: true })
      )
  )

/** `eventually`, but a timeout is a failure that says what it waited for (and the last value). */
export const until = <A>(what: string, read: Effect.Effect<A>, done: (a: A) => boolean, timeoutMs = 90_000) =>
  Effect.flatMap(eventually(read, done, timeoutMs), (value) =>
    done(value) ? Effect.succeed(value) : Effect.dieMessage(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
  )

/** Fast devnets for tests that run the whole service as a process. */
export const FAST_DEVNETS: Record<string, string> = {
  FACET_DEVNET_TRON_BLOCK_MS: "250",
  FACET_DEVNET_SOLANA_SLOT_MS: "150",
  FACET_DEVNET_SOLANA_FINALITY_SLOTS: "4",
  FACET_DEVNET_BEP20_BLOCK_SECONDS: "1",
  FACET_CONFIRMATIONS_TRC20: "3",
  FACET_CONFIRMATIONS_BEP20: "2",
  FACET_INDEXER_POLL_MS: "100"
}

/**
 * `npm start` as a user runs it: its own node process on the embedded PostgreSQL of `dataDir` (no
 * DATABASE_URL), logging to `dataDir/../<name>.log`; ready once /health answers 200. Stopped (SIGINT,
 * then SIGKILL) when the scope closes if the test has not stopped it. Devnets are fast unless
 * `devnets` is "as npm start" (its default block times and confirmations). `ready` "answering": ready
 * once /health answers at all (503 too: its nodes may be refusing it); "spawned": at once (one that
 * resumes into its crash point may die before it is healthy).
 */
export const startService = (
  dataDir: string,
  name: string,
  env: Record<string, string> = {},
  devnets: "fast" | "as npm start" = "fast",
  ready: "healthy" | "answering" | "spawned" = "healthy"
) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const port = yield* freePort
      const logFile = path.join(path.dirname(dataDir), `${name}.log`)
      const out = fs.openSync(logFile, "w")
      const { DATABASE_URL: _ignored, ...inherited } = process.env
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        env: {
          ...inherited,
          ...(devnets === "fast" ? FAST_DEVNETS : {}),
          ...env,
          FACET_DATA_DIR: dataDir,
          PORT: String(port)
        },
        stdio: ["ignore", out, out]
      })
      fs.closeSync(out)
      const pid = child.pid ?? 0
      const url = `http://127.0.0.1:${port}`
      const service: ServiceProcess = { pid, url, logFile, log: () => fs.readFileSync(logFile, "utf8") }
      if (ready === "spawned") return service
      const deadline = Date.now() + 120_000
      for (;;) {
        const status = yield* Effect.promise(() =>
          fetch(`${url}/health`).then(
            (r) => r.status,
            () => 0
          )
        )
        // "answering": up, whatever /health says (its nodes may refuse it for a while)
        if (status === 200 || (ready === "answering" && status === 503)) return service
        if (!isAlive(pid) || Date.now() > deadline) {
          return yield* Effect.die(new Error(`the service did not become healthy:\n${service.log().slice(-3000)}`))
        }
        yield* Effect.sleep("250 millis")
      }
    }),
    (service) =>
      Effect.gen(function* () {
        if (!isAlive(service.pid)) return
        process.kill(service.pid, "SIGINT")
        if (!(yield* waitForExit(service.pid, "30 seconds"))) process.kill(service.pid, "SIGKILL")
      })
  )

/**
 * The environment an operator command needs beside the service under test: its database and its master
 * seed (an operator command reads the service's seed, never makes one of its own).
 */
export const operatorEnvOf = (config: AppConfigShape): Record<string, string> => ({
  DATABASE_URL: Option.match(config.databaseUrl, { onNone: () => "", onSome: Redacted.value }),
  ...Option.match(config.masterSeed, {
    onNone: () => ({}),
    onSome: (seed) => ({ FACET_MASTER_SEED: Redacted.value(seed) })
  })
})

/** Runs a project command (`src/main.ts`, a CLI) on `dataDir` to its end: exit code and everything it printed. */
export const runToExit = (
  script: string,
  args: ReadonlyArray<string>,
  dataDir: string,
  env: Record<string, string> = {}
) =>
  Effect.async<{ readonly code: number | null; readonly output: string }>((resume) => {
    const { DATABASE_URL: _ignored, ...inherited } = process.env
    const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
      env: { ...inherited, ...FAST_DEVNETS, FACET_DATA_DIR: dataDir, PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    // "close", not "exit": after "exit" the pipes may still hold output not yet read
    child.on("close", (code) => resume(Effect.succeed({ code, output })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Stops the service as Ctrl-C does and waits for it to exit. */
export const interrupt = (service: ServiceProcess) =>
  Effect.gen(function* () {
    process.kill(service.pid, "SIGINT")
    return yield* waitForExit(service.pid, "30 seconds")
  })

/** `use` on the service's own database while it runs (its embedded PostgreSQL starts again with each start). */
export const withServiceDatabase = <A, E>(dataDir: string, use: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Option.match(runningEmbeddedUrl(dataDir), {
    onNone: () => Effect.dieMessage("the service's PostgreSQL is not running"),
    onSome: (url) =>
      use.pipe(
        Effect.provide(Layer.provide(PgClient.layer({ url, maxConnections: 2 }), Reactivity.layer)),
        Effect.orDie
      )
  })

/** The endpoints the running service wrote for `npm run pay`. */
export const readDevnetFile = (dataDir: string) =>
  Schema.decodeUnknown(Schema.parseJson(DevnetFile))(fs.readFileSync(devnetFilePath(dataDir), "utf8")).pipe(
    Effect.orDie
  )

/**
 * The devnets' own addresses as the running service last wrote them (each start of the service starts
 * them on new ports): what the balancers forward to. Read again only when the file changes.
 */
export const devnetsOf = (dataDir: string) => {
  let cached: { readonly mtimeMs: number; readonly file: DevnetFile } | undefined
  const decode = Schema.decodeUnknownOption(Schema.parseJson(DevnetFile))
  return (): DevnetFile | undefined => {
    const stat = fs.statSync(devnetFilePath(dataDir), { throwIfNoEntry: false })
    if (stat === undefined) return undefined
    if (cached?.mtimeMs !== stat.mtimeMs) {
      const file = decode(fs.readFileSync(devnetFilePath(dataDir), "utf8"))
      if (Option.isNone(file)) return undefined
      cached = { mtimeMs: stat.mtimeMs, file: file.value }
    }
    return cached.file
  }
}

/** Calls the service's API over HTTP; JSON in and out. */
export const api = (
  service: ServiceProcess,
  method: string,
  url: string,
  options: { readonly apiKey?: string; readonly json?: unknown; readonly headers?: Record<string, string> } = {}
) =>
  Effect.promise(async () => {
    const response = await fetch(`${service.url}${url}`, {
      method,
      headers: {
        "content-type": "application/json",
        ...(options.apiKey === undefined ? {} : { "x-api-key": options.apiKey }),
        ...options.headers
      },
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) })
    })
    const body: unknown = await response.json().catch(() => undefined)
    return { status: response.status, body }
  })

/** Every process whose command line names `dir` (the embedded PostgreSQL, anvil): what a run left running. */
const processesUnder = (dir: string): ReadonlyArray<{ readonly pid: number; readonly cmdline: string }> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid || !isAlive(pid)) return []
    const cmdline = readCmdline(pid)
    return cmdline.includes(dir) ? [{ pid, cmdline: cmdline.slice(0, 160) }] : []
  })

/** Waits (up to 10 s) until nothing runs under `dir`; what still does. */
export const waitUntilNoneUnder = (dir: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100 && processesUnder(dir).length > 0; i++) yield* Effect.sleep("100 millis")
    return processesUnder(dir)
  })

const OwnerPids = Schema.parseJson(Schema.Struct({ postgresPid: Schema.Number }))

/** The processes a service started in `dataDir`: its embedded PostgreSQL and its anvil. */
export const serviceChildPids = (dataDir: string) => [
  Schema.decodeUnknownSync(OwnerPids)(fs.readFileSync(path.join(dataDir, "postgres.owner.json"), "utf8")).postgresPid,
  Number(fs.readFileSync(`${devnetStatePaths(dataDir).anvilState}.pid`, "utf8").trim())
]
