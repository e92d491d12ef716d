import type { Command } from "@effect/cli"
import type { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect } from "effect"
import { vi } from "vitest"
import { exitCodeOf } from "../src/operator/cli.js"

/** What an operator command ended with, run in this process: its code, and what it printed line by line. */
export interface CommandOutcome {
  readonly code: number
  /** stdout without the log lines the services write there too (as the command's own process prints them) */
  readonly stdout: string
  readonly stderr: string
}

/**
 * `npm run <script> -- ...args` in this process: `command` parsed and run by the shared runner
 * (src/operator/cli.ts `exitCodeOf`) on the services it was built with, its console captured. No Node
 * start-up (about 3 s of CPU a command): test/operator-clis.test.ts spawns the entries that show it wired.
 */
export const runInProcess = <Name extends string, E, A>(
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  script: string,
  args: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    const stdout: Array<string> = []
    const stderr: Array<string> = []
    const code = yield* Effect.acquireUseRelease(
      Effect.sync(() => [
        vi.spyOn(console, "log").mockImplementation((...line: Array<unknown>) => {
          stdout.push(line.join(" "))
        }),
        vi.spyOn(console, "error").mockImplementation((...line: Array<unknown>) => {
          stderr.push(line.join(" "))
        })
      ]),
      () => exitCodeOf(command, script, ["node", script, ...args]),
      (spies) =>
        Effect.sync(() => {
          for (const spy of spies) spy.mockRestore()
        })
    )
    return {
      code,
      stdout: stdout.filter((line) => !line.startsWith("timestamp=")).join("\n"),
      stderr: stderr.join("\n")
    } satisfies CommandOutcome
  })

/**
 * An operator command run in this process as its own process would run it: on this process's configuration
 * with `env` on top (FACET_DATA_DIR of a running service, its database). Its exit code and everything it
 * printed, stdout then stderr.
 */
export const runOperator = <Name extends string, E, A>(
  command: Command.Command<Name, NodeContext.NodeContext, E, A>,
  script: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>
) =>
  Effect.configProviderWith((service) =>
    runInProcess(command, script, args).pipe(
      Effect.withConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries(env)), { pathDelim: "_" }).pipe(
          ConfigProvider.orElse(() => service)
        )
      ),
      Effect.map((ran) => ({ code: ran.code, output: `${ran.stdout}\n${ran.stderr}` }))
    )
  )
