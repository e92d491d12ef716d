import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { isAlive, waitForExit } from "../processes/child-process.js"
import {
  api,
  interrupt,
  processWorkDir,
  readDevnetFile,
  runToExit,
  serviceChildPids,
  startService,
  type ServiceProcess
} from "../../test/service-process.js"
import { asRecord } from "../../test/json.js"
import { payFromCustomer } from "./devnet-payments.js"
import { devnetStatePaths } from "./devnets.js"

const CHAINS = ["TRC20", "BEP20", "SOLANA"] as const

const workDir = processWorkDir("facet-restart-")

/** Runs `use` with a service started in a scope of its own, closed (the service stopped) afterwards. */
const withService = <A, E>(dataDir: string, name: string, use: (service: ServiceProcess) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Effect.flatMap(Scope.extend(startService(dataDir, name), scope), use))
    yield* Scope.close(scope, Exit.void)
    return yield* exit
  })

const onboard = (service: ServiceProcess) =>
  Effect.map(
    api(service, "POST", "/v1/ai/merchant-apply", {
      json: {
        project_name: `Restart ${Date.now()}`,
        business_type: "shop",
        use_case: "deposits",
        agree_terms: true,
        integration_mode: "exchange_wallet"
      }
    }),
    (res) => String(asRecord(asRecord(res.body).env).FACET_API_KEY)
  )

const depositAddress = (service: ServiceProcess, apiKey: string, chain: string) =>
  Effect.map(
    api(service, "POST", "/v1/deposit-addresses", {
      apiKey,
      json: { external_user_id: "alice", chain, currency: "USDT" }
    }),
    (res) => String(asRecord(res.body).address)
  )

/** Pays every chain's address from the devnet customers, as `npm run pay` does. */
const payAll = (dataDir: string, addresses: ReadonlyMap<string, string>, amount: string) =>
  Effect.flatMap(readDevnetFile(dataDir), (file) =>
    Effect.forEach(CHAINS, (chain) => payFromCustomer(file, `${chain}-USDT`, addresses.get(chain) ?? "", amount))
  )

const confirmedDeposits = (service: ServiceProcess, apiKey: string, total: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 60_000
    for (;;) {
      const res = yield* api(service, "GET", "/v1/transactions?status=confirmed&type=deposit&limit=100", { apiKey })
      const body = asRecord(res.body)
      if (body.total === total || Date.now() > deadline) {
        return (Array.isArray(body.items) ? body.items : [])
          .map((t) => `${String(asRecord(t).chain)} ${String(asRecord(t).amount)}`)
          .sort()
      }
      yield* Effect.sleep("250 millis")
    }
  })

describe("a second `npm start`", () => {
  it.live(
    "resumes the devnets: a payment before the restart and one after are both credited, on every chain",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dataDir = path.join(yield* workDir, "data")
          const before = yield* withService(dataDir, "first", (service) =>
            Effect.gen(function* () {
              const apiKey = yield* onboard(service)
              const addresses = new Map(
                yield* Effect.forEach(CHAINS, (chain) =>
                  Effect.map(depositAddress(service, apiKey, chain), (a) => [chain, a] as const)
                )
              )
              yield* payAll(dataDir, addresses, "1.5")
              const credited = yield* confirmedDeposits(service, apiKey, 3)
              const children = serviceChildPids(dataDir)
              expect(yield* interrupt(service)).toBe(true)
              return { apiKey, addresses, credited, children }
            })
          )
          expect(before.credited).toEqual(["BEP20 1.5", "SOLANA 1.5", "TRC20 1.5"])
          // Ctrl-C stopped everything the service had started
          for (const pid of before.children) expect(yield* waitForExit(pid, "10 seconds")).toBe(true)

          const after = yield* withService(dataDir, "second", (service) =>
            Effect.gen(function* () {
              yield* payAll(dataDir, before.addresses, "2.25")
              const credited = yield* confirmedDeposits(service, before.apiKey, 6)
              const list = asRecord(
                (yield* api(service, "GET", "/v1/deposit-addresses?external_user_id=alice", { apiKey: before.apiKey }))
                  .body
              )
              const balances = (Array.isArray(list.items) ? list.items : []).map((d) => String(asRecord(d).balance))
              const health = asRecord((yield* api(service, "GET", "/health")).body)
              return { credited, balances, health, log: service.log() }
            })
          )
          expect(after.log).toMatch(/devnets resumed/)
          expect(after.credited).toEqual([
            "BEP20 1.5",
            "BEP20 2.25",
            "SOLANA 1.5",
            "SOLANA 2.25",
            "TRC20 1.5",
            "TRC20 2.25"
          ])
          expect(after.balances).toEqual(["3.75", "3.75", "3.75"])
          expect(after.health.status).toBe("ok")

          // the devnets' kept chains gone: the start refuses in one line instead of halting later
          const kept = devnetStatePaths(dataDir).dir
          fs.renameSync(kept, `${kept}.moved`)
          const refused = yield* runToExit("src/main.ts", [], dataDir)
          expect(refused.code).toBe(1)
          expect(refused.output).toMatch(
            /cannot start: the database has indexed the devnet chains BEP20, SOLANA, TRC20, but .* holds no devnet to resume.*npm run devnet:reset/
          )
          fs.renameSync(`${kept}.moved`, kept)

          // a clean slate, asked for: chains and their money rows go, merchants and addresses stay
          const reset = yield* runToExit("src/devnet/devnet-reset-cli.ts", ["--yes"], dataDir)
          expect(reset.output).toMatch(
            /devnets reset: 6 transactions, 6 ledger transfers, 6 webhook events removed; 0 orders back to unpaid; 3 chains forgotten/
          )
          expect(reset.code).toBe(0)
          const fresh = yield* withService(dataDir, "after-reset", (service) =>
            Effect.gen(function* () {
              const transactions = asRecord(
                (yield* api(service, "GET", "/v1/transactions", { apiKey: before.apiKey })).body
              )
              const list = asRecord(
                (yield* api(service, "GET", "/v1/deposit-addresses?external_user_id=alice", { apiKey: before.apiKey }))
                  .body
              )
              return { transactions: transactions.total, addresses: list.total, log: service.log() }
            })
          )
          expect(fresh).toMatchObject({ transactions: 0, addresses: 3, log: expect.stringMatching(/devnets made/) })
        })
      ),
    { timeout: 240_000 }
  )

  it.live(
    "after a SIGKILL of the service alone, none of its processes is left and the next start is clean",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const dataDir = path.join(yield* workDir, "data")
          const killed = yield* withService(dataDir, "killed", (service) =>
            Effect.gen(function* () {
              const apiKey = yield* onboard(service)
              const address = yield* depositAddress(service, apiKey, "BEP20")
              const children = serviceChildPids(dataDir)
              // what the OOM killer does: the one node process, not its process group
              process.kill(service.pid, "SIGKILL")
              return { apiKey, address, children }
            })
          )
          for (const pid of killed.children) expect(yield* waitForExit(pid, "15 seconds")).toBe(true)
          expect(killed.children.filter(isAlive)).toEqual([])

          const next = yield* withService(dataDir, "after-kill", (service) =>
            Effect.gen(function* () {
              const file = yield* readDevnetFile(dataDir)
              yield* payFromCustomer(file, "BEP20-USDT", killed.address, "4")
              const credited = yield* confirmedDeposits(service, killed.apiKey, 1)
              const health = asRecord((yield* api(service, "GET", "/health")).body)
              return { credited, health, log: service.log() }
            })
          )
          // nothing to clean up: no orphaned PostgreSQL, no anvil of the earlier run, no lease to wait out
          expect(next.log).not.toMatch(/orphan|earlier run|waiting to take it again/)
          expect(next.log).toMatch(/devnets resumed/)
          expect(next.credited).toEqual(["BEP20 4"])
          expect(next.health.status).toBe("ok")
          expect(Option.some(next.health.reasons)).toEqual(Option.some([]))
        })
      ),
    { timeout: 240_000 }
  )
})
