import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { processWorkDir, runToExit } from "./service-process.js"

/**
 * Every operator command, with what its --help names (docs/operating/cli.md) and, for commands of each
 * folder, a command line that is right but for an unknown flag (the required flags given: a missing one is
 * reported first). Every command runs through the one runner (src/operator/cli.ts) that names the flag, so
 * a few show it wired; each spawn costs CI two seconds.
 */
const CLIS: ReadonlyArray<{
  readonly script: string
  readonly names: ReadonlyArray<string>
  readonly withUnknownFlag?: ReadonlyArray<string>
}> = [
  { script: "src/migrate-cli.ts", names: ["migrate"] },
  {
    script: "src/webhooks/webhooks-cli.ts",
    names: ["list", "replay", "--dead", "--event"],
    withUnknownFlag: ["list", "--no-such-flag"]
  },
  {
    script: "src/devnet/pay-cli.ts",
    names: ["--asset", "--to", "--amount"]
  },
  { script: "src/devnet/devnet-reset-cli.ts", names: ["--yes"] },
  {
    script: "indexer/indexer-cli.ts",
    names: ["--chain", "--rescan-from", "--to", "--rescan-untraced"],
    withUnknownFlag: ["--chain", "TRC20", "--no-such-flag"]
  },
  { script: "indexer/reconcile-cli.ts", names: ["--chain"] },
  // its unknown flag: the second test
  { script: "custody/custody-cli.ts", names: ["list", "show", "retry", "energy"] },
  {
    script: "custody/withdrawals-cli.ts",
    names: ["list", "approve", "reject", "cancel", "auto-approve"],
    withUnknownFlag: ["approve", "w_1", "--by", "ops", "--no-such-flag"]
  },
  {
    script: "custody/merchants-cli.ts",
    names: ["policy", "address-book", "users"],
    // before any command: the runner names the flag where the library names only the commands
    withUnknownFlag: ["--no-such-flag"]
  }
]

// help is printed with ANSI styles; compare the text
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")
const plain = (output: string) => output.replace(ANSI, "")

describe("operator commands", () => {
  it.scoped(
    "--help names each command's subcommands and exits 0 without starting anything; an unknown flag exits 2 naming it",
    () =>
      Effect.gen(function* () {
        // an empty data dir and no DATABASE_URL: --help and a usage error must not need either, nor make them
        const dataDir = yield* processWorkDir("facet-operator-clis-")
        yield* Effect.forEach(
          CLIS,
          ({ script, names, withUnknownFlag }) =>
            Effect.gen(function* () {
              const help = yield* runToExit(script, ["--help"], dataDir)
              expect(help.code, `${script} --help: ${help.output}`).toBe(0)
              for (const name of names) expect(plain(help.output), `${script} --help`).toContain(name)
              if (withUnknownFlag === undefined) return
              const unknown = yield* runToExit(script, withUnknownFlag, dataDir)
              expect(unknown.code, `${script} ${withUnknownFlag.join(" ")}: ${unknown.output}`).toBe(2)
              expect(unknown.output).toContain("--no-such-flag")
            }),
          { concurrency: 2 }
        )
        expect(fs.readdirSync(dataDir)).toEqual([])
      }),
    { timeout: 240_000 }
  )

  it.scoped(
    "a subcommand's --help and a missing or malformed flag: exit 0, exit 2 naming the flag",
    () =>
      Effect.gen(function* () {
        const dataDir = yield* processWorkDir("facet-operator-clis-")
        const merchants = yield* runToExit("custody/merchants-cli.ts", ["address-book", "--help"], dataDir)
        expect(merchants.code, merchants.output).toBe(0)
        for (const name of ["list", "add", "remove", "--chain", "--address"])
          expect(plain(merchants.output)).toContain(name)
        const unknown = yield* runToExit("custody/custody-cli.ts", ["list", "--no-such-flag"], dataDir)
        expect([unknown.code, unknown.output]).toEqual([2, expect.stringContaining("'--no-such-flag'")])
        const noBy = yield* runToExit("custody/withdrawals-cli.ts", ["approve", "w_1"], dataDir)
        expect([noBy.code, noBy.output]).toEqual([2, expect.stringContaining("--by")])
        const badChain = yield* runToExit("indexer/indexer-cli.ts", ["--chain", "ETH"], dataDir)
        expect([badChain.code, badChain.output]).toEqual([2, expect.stringContaining("--chain ETH: expected")])
        // a well-formed command line without a database: it could not be done (1), not bad usage
        const noDatabase = yield* runToExit("custody/custody-cli.ts", ["list"], dataDir)
        expect([noDatabase.code, noDatabase.output]).toEqual([1, expect.stringContaining("no database")])
        expect(fs.readdirSync(dataDir)).toEqual([])
      }),
    { timeout: 120_000 }
  )
})
