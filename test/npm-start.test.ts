import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { custodyCommand } from "../custody/custody-command.js"
import { merchantsCommand, MerchantsOperatorLive } from "../custody/merchants-command.js"
import { withdrawalsCommand, WithdrawalsOperatorLive } from "../custody/withdrawals-command.js"
import { reconcileCommand } from "../indexer/reconcile-command.js"
import { devnetResetCommand } from "../src/devnet/devnet-reset-command.js"
import { payCommand } from "../src/devnet/pay-command.js"
import { migrateCommand } from "../src/migrate-command.js"
import { webhooksCommand } from "../src/webhooks/webhooks-command.js"
import { runOperator } from "./cli-in-process.js"
import { asRecord } from "./json.js"
import { waitForExit, withLifeline } from "../src/processes/child-process.js"
import { api, processWorkDir, type ServiceProcess, serviceChildPids, startService } from "./service-process.js"

/**
 * One `npm start` (the service as a process on its embedded PostgreSQL and devnets), as people use it: a
 * newcomer's README tour, run as written — only the address (`localhost:8080`) and the data directory
 * (`.facet/`) are the test's own —, an operator's commands beside it, and last its stop with the database
 * gone. One service for the three: a start costs CI about 15 s.
 */
const root = path.resolve(import.meta.dirname, "..")

class Running extends Context.Tag("test/Running")<
  Running,
  { readonly service: ServiceProcess; readonly dataDir: string }
>() {}

const RunningLive = Layer.scoped(
  Running,
  Effect.gen(function* () {
    const dataDir = path.join(yield* processWorkDir("facet-tour-"), "data")
    return { service: yield* startService(dataDir, "npm-start", { FACET_STOP_SECONDS: "3" }), dataDir }
  })
)

const tourOf = (readme: string) => {
  const section = readme.slice(readme.indexOf("## A short tour"))
  const block = /```sh\n([\s\S]*?)```/.exec(section)
  if (block?.[1] === undefined) throw new Error("the README has no tour block")
  return block[1]
}

const runTour = (script: string, env: Record<string, string>) =>
  Effect.async<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    // `timeout` ends a tour stuck in its wait loop (an order that never gets PAID) with the output so far,
    // and passes on the lifeline's signal if this process dies first
    const run = withLifeline("timeout", ["120", "bash", "-euo", "pipefail", "-c", script], "TERM")
    const child = execFile(
      run.command,
      run.args,
      { cwd: root, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : (child.exitCode ?? 1), stdout, stderr }))
    )
  })

describe("npm start, as people use it", () => {
  layer(RunningLive, { excludeTestServices: true, timeout: "150 seconds" })((it) => {
    it.effect(
      "the README's tour ends with the order PAID and writes only where git ignores",
      () =>
        Effect.gen(function* () {
          const { service, dataDir } = yield* Running
          const script = tourOf(fs.readFileSync(path.join(root, "README.md"), "utf8"))
            .replaceAll("localhost:8080", service.url.replace("http://", ""))
            .replaceAll("./.facet/", `${dataDir}/`)
            .replaceAll(".facet/", `${dataDir}/`)
          expect(script).not.toContain(".facet")
          const before = fs.readdirSync(root).sort()
          const { code, stdout, stderr } = yield* runTour(script, { FACET_DATA_DIR: dataDir })
          expect({ code, output: code === 0 ? "" : `${stdout}${stderr}` }).toEqual({ code: 0, output: "" })
          expect(stdout.trim().split("\n").at(-1)).toContain('"status":"PAID"')
          expect(fs.readdirSync(root).sort()).toEqual(before)
        }),
      150_000
    )

    it.effect(
      "every operator command works beside the running service, on its database",
      () =>
        Effect.gen(function* () {
          const { service, dataDir } = yield* Running
          const applied = yield* api(service, "POST", "/v1/ai/merchant-apply", {
            json: { project_name: "Beside", business_type: "shop", use_case: "tests", agree_terms: true }
          })
          const merchant = String(asRecord(applied.body).merchant_id)
          const env = { FACET_DATA_DIR: dataDir }
          const merchants = merchantsCommand(MerchantsOperatorLive)
          const ran = {
            migrate: yield* runOperator(migrateCommand, "migrate", [], env),
            webhooks: yield* runOperator(webhooksCommand, "webhooks", ["list"], env),
            custody: yield* runOperator(custodyCommand, "custody", ["list"], env),
            energy: yield* runOperator(custodyCommand, "custody", ["energy", "status"], env),
            withdrawals: yield* runOperator(withdrawalsCommand(WithdrawalsOperatorLive), "withdrawals", ["list"], env),
            policy: yield* runOperator(merchants, "merchants", ["policy", merchant], env),
            users: yield* runOperator(merchants, "merchants", ["users", merchant, "list"], env),
            reconcile: yield* runOperator(reconcileCommand, "reconcile", ["--chain", "TRC20"], env)
          }
          const failing = Object.entries(ran).filter(([, outcome]) => outcome.code !== 0)
          expect(failing).toEqual([])
          // an unknown merchant is the operator's mistake (exit 2), not a default policy
          const unknown = {
            policy: yield* runOperator(merchants, "merchants", ["policy", "mer_nope"], env),
            book: yield* runOperator(merchants, "merchants", ["address-book", "mer_nope", "list"], env),
            users: yield* runOperator(merchants, "merchants", ["users", "mer_nope", "list"], env)
          }
          expect(Object.values(unknown).map((outcome) => [outcome.code, outcome.output.trim()])).toEqual(
            Array.from({ length: 3 }, () => [2, "merchant mer_nope not found"])
          )
          // a bad value is one line and exit 2, not a library's stack
          const payTo = yield* runOperator(
            payCommand,
            "pay",
            ["--asset", "TRC20-USDT", "--to", "0xabc", "--amount", "1"],
            env
          )
          expect([payTo.code, payTo.output.trim()]).toEqual([2, "--to 0xabc is not a TRON address (base58check T…)"])
          // the one command that must not run beside it says so
          const reset = yield* runOperator(devnetResetCommand, "devnet:reset", ["--yes"], env)
          expect(reset.code).toBe(1)
          expect(reset.output).toMatch(/is running on .*: stop it first/)
        }),
      120_000
    )

    // last: it stops the service. @effect/cluster retries its shard release for ever while the database is
    // gone: Ctrl-C hung the service (seen when a failed test removed a running service's directory)
    it.effect(
      "a stop with its database gone still ends within FACET_STOP_SECONDS, its children with it",
      () =>
        Effect.gen(function* () {
          const { service, dataDir } = yield* Running
          const [postgres, anvil] = serviceChildPids(dataDir)
          // the service has run a while (the cluster holds its shards); the stop comes once the shard locks
          // could not be refreshed: releasing the shards then waits for healthy locks, which never come
          process.kill(postgres ?? 0, "SIGKILL")
          yield* Effect.sleep("3 seconds")
          process.kill(service.pid, "SIGINT")
          expect(yield* waitForExit(service.pid, "20 seconds")).toBe(true)
          expect(yield* waitForExit(anvil ?? 0, "10 seconds")).toBe(true)
          expect(service.log()).toMatch(/did not finish within 3 s \(FACET_STOP_SECONDS\)/)
        }),
      60_000
    )
  })
})
