import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { custodyCommand } from "../custody/custody-command.js"
import { type MerchantServices, merchantsCommand } from "../custody/merchants-command.js"
import { type WithdrawalServices, withdrawalsCommand } from "../custody/withdrawals-command.js"
import { indexerCommand } from "../indexer/indexer-command.js"
import { reconcileCommand } from "../indexer/reconcile-command.js"
import { devnetResetCommand } from "../src/devnet/devnet-reset-command.js"
import { payCommand } from "../src/devnet/pay-command.js"
import { migrateCommand } from "../src/migrate-command.js"
import { webhooksCommand } from "../src/webhooks/webhooks-command.js"
import { type CommandOutcome, runInProcess } from "./cli-in-process.js"
import { processWorkDir, runToExit } from "./service-process.js"

/** Services a usage test never reaches: help and usage errors are answered before a subcommand runs. */
const unreached = <S>() => Layer.effectContext<S, never, never>(Effect.dieMessage("a usage test builds no services"))

/**
 * Every operator command, with what its --help names (docs/operating/cli.md) and, for commands of each
 * folder, a command line that is right but for an unknown flag (the required flags given: a missing one is
 * reported first). They run in this process, on the command trees their entries run; the last test spawns
 * one entry (each spawn costs CI about three seconds of CPU) to show the runner's exit codes reach the shell.
 */
const CLIS: ReadonlyArray<{
  readonly script: string
  /** The command line run in this process, on the command tree the entry runs. */
  readonly run: (args: ReadonlyArray<string>) => Effect.Effect<CommandOutcome, unknown>
  readonly names: ReadonlyArray<string>
  readonly withUnknownFlag?: ReadonlyArray<string>
}> = [
  { script: "migrate", run: (args) => runInProcess(migrateCommand, "migrate", args), names: ["migrate"] },
  {
    script: "webhooks",
    run: (args) => runInProcess(webhooksCommand, "webhooks", args),
    names: ["list", "replay", "--dead", "--event"],
    withUnknownFlag: ["list", "--no-such-flag"]
  },
  { script: "pay", run: (args) => runInProcess(payCommand, "pay", args), names: ["--asset", "--to", "--amount"] },
  { script: "devnet:reset", run: (args) => runInProcess(devnetResetCommand, "devnet:reset", args), names: ["--yes"] },
  {
    script: "indexer",
    run: (args) => runInProcess(indexerCommand, "indexer", args),
    names: ["--chain", "--rescan-from", "--to", "--rescan-untraced"],
    withUnknownFlag: ["--chain", "TRC20", "--no-such-flag"]
  },
  { script: "reconcile", run: (args) => runInProcess(reconcileCommand, "reconcile", args), names: ["--chain"] },
  {
    script: "custody",
    run: (args) => runInProcess(custodyCommand, "custody", args),
    names: ["list", "show", "retry", "energy"],
    withUnknownFlag: ["list", "--no-such-flag"]
  },
  {
    script: "withdrawals",
    run: (args) => runInProcess(withdrawalsCommand(unreached<WithdrawalServices>()), "withdrawals", args),
    names: ["list", "approve", "reject", "cancel", "auto-approve"],
    withUnknownFlag: ["approve", "w_1", "--by", "ops", "--no-such-flag"]
  },
  {
    script: "merchants",
    run: (args) => runInProcess(merchantsCommand(unreached<MerchantServices>()), "merchants", args),
    names: ["policy", "address-book", "users"],
    // before any command: the runner names the flag where the library names only the commands
    withUnknownFlag: ["--no-such-flag"]
  }
]

// help is printed with ANSI styles; compare the text
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const plain = (output: string) => output.replace(ANSI, "")
const printed = (ran: { readonly stdout: string; readonly stderr: string }) => plain(`${ran.stdout}\n${ran.stderr}`)
const run = (script: string, ...args: ReadonlyArray<string>) => {
  const found = CLIS.find((cli) => cli.script === script)
  if (found === undefined) throw new Error(`no command ${script}`)
  return found.run(args)
}

describe("operator commands", () => {
  it.effect("--help names each command's subcommands and exits 0; an unknown flag exits 2 naming it", () =>
    Effect.forEach(
      CLIS,
      ({ script, run, names, withUnknownFlag }) =>
        Effect.gen(function* () {
          const help = yield* run(["--help"])
          expect(help.code, `${script} --help: ${printed(help)}`).toBe(0)
          for (const name of names) expect(printed(help), `${script} --help`).toContain(name)
          // written for a reader, off a terminal in plain text: no colour codes, no library boilerplate
          const raw = `${help.stdout}\n${help.stderr}`
          expect(raw, `${script} --help`).not.toContain(String.fromCharCode(27))
          expect(raw, `${script} --help`).not.toContain("A user-defined piece of text")
          if (withUnknownFlag === undefined) return
          const unknown = yield* run(withUnknownFlag)
          expect(unknown.code, `${script} ${withUnknownFlag.join(" ")}: ${printed(unknown)}`).toBe(2)
          expect(printed(unknown)).toContain("--no-such-flag")
        }),
      { discard: true }
    )
  )

  it.effect("a subcommand's --help and a missing or malformed flag: exit 0, exit 2 naming the flag", () =>
    Effect.gen(function* () {
      const merchants = yield* run("merchants", "address-book", "--help")
      expect(merchants.code, printed(merchants)).toBe(0)
      for (const name of ["list", "add", "remove", "--chain", "--address"]) expect(printed(merchants)).toContain(name)
      const unknown = yield* run("custody", "list", "--no-such-flag")
      expect([unknown.code, printed(unknown)]).toEqual([2, expect.stringContaining("'--no-such-flag'")])
      const noBy = yield* run("withdrawals", "approve", "w_1")
      expect([noBy.code, printed(noBy)]).toEqual([2, expect.stringContaining("--by")])
      const badChain = yield* run("indexer", "--chain", "ETH")
      expect([badChain.code, printed(badChain)]).toEqual([2, expect.stringContaining("--chain ETH: expected")])
    })
  )

  it.scoped(
    "an entry's process exits with the runner's code and starts nothing: 0 for --help, 2 for bad usage, 1 without a database",
    () =>
      Effect.gen(function* () {
        // an empty data dir and no DATABASE_URL: --help and a usage error must not need either, nor make them
        const dataDir = yield* processWorkDir("facet-operator-clis-")
        const [help, unknown, noDatabase, mcpHelp] = yield* Effect.all(
          [
            runToExit("custody/custody-cli.ts", ["--help"], dataDir),
            runToExit("custody/merchants-cli.ts", ["--no-such-flag"], dataDir),
            runToExit("custody/custody-cli.ts", ["list"], dataDir),
            // the MCP server is no @effect/cli command: its --help is its own, and starts no server
            runToExit("http/mcp/mcp-cli.ts", ["--help"], dataDir)
          ],
          { concurrency: 2 }
        )
        expect([mcpHelp.code, mcpHelp.output]).toEqual([0, expect.stringContaining("FACET_API_KEY")])
        expect(mcpHelp.output).not.toContain("MCP server on stdio for")
        expect(help.code, help.output).toBe(0)
        expect(plain(help.output)).toContain("retry")
        expect([unknown.code, unknown.output]).toEqual([2, expect.stringContaining("--no-such-flag")])
        // a well-formed command line without a database: it could not be done (1), not bad usage
        expect([noDatabase.code, noDatabase.output]).toEqual([1, expect.stringContaining("no database")])
        expect(fs.readdirSync(dataDir)).toEqual([])
      }),
    { timeout: 120_000 }
  )
})
