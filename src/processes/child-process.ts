import { type Duration, Effect, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The processes the service starts itself (PostgreSQL, anvil): how they die with it, and how a later
 * start recognises and stops one that an earlier run left behind.
 */

/** A zombie has exited and only waits for its parent (or init) to reap it. */
const isZombie = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

/** True while `pid` runs (EPERM: it does, as another user — postgres, when we are root). */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return !isZombie(pid)
  } catch (error) {
    return error instanceof Error && "code" in error && error.code === "EPERM" && !isZombie(pid)
  }
}

/** The command line of `pid`, words joined by spaces ("" when it is gone or unreadable). */
export const readCmdline = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ")
  } catch {
    return ""
  }
}

/** Waits until `pid` is gone; false when it still runs after `timeout`. */
export const waitForExit = (pid: number, timeout: Duration.DurationInput) =>
  Effect.suspend(() => (isAlive(pid) ? Effect.fail("alive" as const) : Effect.void)).pipe(
    Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo(timeout))),
    Effect.isSuccess
  )

/**
 * Stops `pid` with each signal in turn, giving it `grace` after each before the next; the last should be
 * SIGKILL.
 */
export const stopPid = (pid: number, signals: ReadonlyArray<readonly [NodeJS.Signals, Duration.DurationInput]>) =>
  Effect.gen(function* () {
    for (const [signal, grace] of signals) {
      if (!isAlive(pid)) return
      try {
        process.kill(pid, signal)
      } catch {
        return
      }
      if (yield* waitForExit(pid, grace)) return
      yield* Effect.logWarning(`process ${pid} did not stop after ${signal}`)
    }
  })

const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((candidate) => fs.existsSync(candidate))

/**
 * The command that runs `command` so that it receives `signal` when the service's process dies, however
 * it dies (a SIGKILL of the node process alone included): util-linux `setpriv --pdeathsig` sets the
 * kernel's parent-death signal and then execs the command, so the child keeps one PID. Without setpriv
 * (not Linux) the command runs as is, and the next start stops what a killed run left behind.
 */
export const withLifeline = (command: string, args: ReadonlyArray<string>, signal: "TERM" | "INT") =>
  SETPRIV === undefined
    ? { command, args: [...args], lifeline: false }
    : { command: SETPRIV, args: ["--pdeathsig", signal, "--", command, ...args], lifeline: true }

/** A pid file's process, if it still runs the program it was written for (`expect` in its command line). */
export const livePidFromFile = (file: string, expect: string): number | undefined => {
  let pid: number
  try {
    pid = Number(fs.readFileSync(file, "utf8").split("\n")[0])
  } catch {
    return undefined
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined
  return readCmdline(pid).includes(expect) ? pid : undefined
}

export const writePidFile = (file: string, pid: number) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `${pid}\n`)
}
