import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { makeBep20Client } from "../../src/chains/evm/bep20-client.js"
import { makeSolanaClient } from "../../src/chains/solana/solana-client.js"
import { makeTronClient } from "../../src/chains/tron/tron-client.js"
import { runningEmbeddedUrl } from "../../src/database/embedded-postgres.js"
import { payFromCustomer } from "../../src/devnet/devnet-payments.js"
import type { DevnetFile } from "../../src/devnet/devnets.js"
import { isHexAddress } from "../../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../../src/keys/master-seed.js"
import { LocalSignerLive } from "../../src/keys/signer.js"
import { isAlive, readCmdline } from "../../src/processes/child-process.js"
import { asRecord } from "../json.js"
import { api, processWorkDir, readDevnetFile, type ServiceProcess, startService } from "../service-process.js"
import { startReceiver } from "../webhook-receiver.js"
import { checkInvariants, type ExpectedDeposit, type Violation } from "./invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

const ASSETS = [["TRC20", "TRC20-USDT"], ["BEP20", "BEP20-USDT"], ["SOLANA", "SOLANA-USDT"]] as const

/** Every process whose command line names `dir` (the embedded PostgreSQL, anvil): what a run left running. */
const processesUnder = (dir: string): ReadonlyArray<{ readonly pid: number; readonly cmdline: string }> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid || !isAlive(pid)) return []
    const cmdline = readCmdline(pid)
    return cmdline.includes(dir) ? [{ pid, cmdline: cmdline.slice(0, 160) }] : []
  })

const waitUntilNoneUnder = (dir: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && processesUnder(dir).length > 0; i++) yield* Effect.sleep("100 millis")
    return processesUnder(dir)
  })

/**
 * Crash points: the whole service (`npm start` on its embedded PostgreSQL and devnets) is SIGKILLed at
 * seeded random moments while a workload pays deposit addresses and orders on all three chains, and
 * started again each time. After every kill nothing it started may still run; at the end every payment
 * the chains hold is credited exactly once, every event delivered with its bytes and signature.
 */
export const crashPointsScenario = (options: { readonly crashes: number; readonly seed: number }) =>
  Effect.gen(function*() {
    const random = seededRandom(options.seed).fork("crashes")
    const dataDir = `${yield* processWorkDir("facet-faults-crash-")}/data`
    const receiver = yield* startReceiver()
    const violations: Array<Violation> = []
    const payments: Array<ExpectedDeposit> = []
    let merchant: { apiKey: string; merchantId: string; secret: string } | undefined
    const addresses: Array<{ chain: string; asset: string; address: string }> = []

    const workload = (service: ServiceProcess, file: DevnetFile, until: number) =>
      Effect.gen(function*() {
        if (merchant === undefined) {
          const env = asRecord(asRecord((yield* api(service, "POST", "/v1/ai/merchant-apply", {
            json: { project_name: `Crash points ${options.seed}`, business_type: "shop", use_case: "payments", agree_terms: true, contact_email: "ops@faults.example", webhook_url: receiver.url }
          })).body).env)
          merchant = { apiKey: String(env.FACET_API_KEY), merchantId: String(env.FACET_MERCHANT_ID), secret: String(env.FACET_WEBHOOK_SECRET) }
        }
        const apiKey = merchant.apiKey
        while (Date.now() < until) {
          if (addresses.length < 6 || random.next() < 0.2) {
            const [chain, asset] = random.pick(ASSETS)
            const created = yield* api(service, "POST", "/v1/deposit-addresses", { apiKey, json: { external_user_id: `user-${addresses.length}`, chain, currency: "USDT" } })
            if (created.status === 201) addresses.push({ chain, asset, address: String(asRecord(created.body).address) })
            continue
          }
          const target = random.pick(addresses)
          const amount = `${1 + random.int(20)}.${random.int(100).toString().padStart(2, "0")}`
          const paid = yield* Effect.either(payFromCustomer(file, target.asset, target.address, amount))
          if (paid._tag === "Right") payments.push({ chain: target.chain, txHash: paid.right, to: target.address, amount })
          yield* Effect.sleep(`${100 + random.int(400)} millis`)
        }
      })

    for (let round = 0; round <= options.crashes; round++) {
      const scope = yield* Scope.make()
      const service = yield* startService(dataDir, `run-${round}`).pipe(Scope.extend(scope))
      const file = yield* readDevnetFile(dataDir)
      if (round < options.crashes) {
        // the workload runs until the kill comes, at a random moment
        yield* workload(service, file, Date.now() + 1_000 + random.int(5_000)).pipe(Effect.catchAllDefect(() => Effect.void))
        process.kill(service.pid, "SIGKILL")
        const left = yield* waitUntilNoneUnder(dataDir)
        for (const p of left) violations.push({ invariant: "no process left behind", detail: `after SIGKILL ${round + 1}: pid ${p.pid} ${p.cmdline}` })
        yield* Scope.close(scope, Exit.void)
        continue
      }
      // the last run: converge, then check
      yield* workload(service, file, Date.now() + 3_000)
      const apiKey = merchant?.apiKey ?? ""
      const direct: ReadonlyArray<ChainClient> = yield* Effect.all([
        makeTronClient({ url: file.tron.url, tokens: new Map([["USDT", file.tron.tokens.USDT]]), confirmations: 3 }),
        makeBep20Client({ rpcUrl: file.bep20.rpcUrl, chainId: file.bep20.chainId, tokens: new Map(isHexAddress(file.bep20.tokens.USDT) ? [["USDT", file.bep20.tokens.USDT]] : []), confirmations: 2, traces: "off" }),
        makeSolanaClient({ rpcUrl: file.solana.rpcUrl, tokens: new Map([["USDT", { mint: file.solana.tokens.USDT, decimals: 6 }]]) })
      ]).pipe(Effect.provide(LocalSignerLive.pipe(Layer.provide(masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow")))))
      // a payment sent just before a kill may be gone with the devnet's unsaved last moment: only what the chain holds counts
      const onChain = yield* Effect.filter(payments, (p) =>
        Effect.map(Effect.option(direct.find((c) => c.chain === p.chain)?.transaction(p.txHash) ?? Effect.succeedNone), (found) =>
          Option.exists(Option.flatten(found), (t) => t.status === "success")))
      const confirmed = (p: ExpectedDeposit) =>
        Effect.map(api(service, "GET", `/v1/transactions?q=${p.txHash}&status=confirmed&type=deposit`, { apiKey }), (r) => Number(asRecord(r.body).total) >= 1)
      const started = Date.now()
      while (Date.now() - started < 120_000 && !(yield* Effect.forEach(onChain, confirmed)).every(Boolean)) yield* Effect.sleep("1 second")
      const url = runningEmbeddedUrl(dataDir)
      if (Option.isNone(url)) return yield* Effect.dieMessage("the service's PostgreSQL is not running")
      const sql = Layer.provide(PgClient.layer({ url: url.value, maxConnections: 2 }), Reactivity.layer)
      // the last webhooks go out
      yield* Effect.gen(function*() {
        const pg = yield* PgClient.PgClient
        for (let i = 0; i < 60; i++) {
          const [row] = yield* pg<{ n: number }>`SELECT count(*)::int AS n FROM webhook_events WHERE status = 'pending' AND destination IS NOT NULL`
          if ((row?.n ?? 0) === 0) break
          yield* Effect.sleep("500 millis")
        }
      }).pipe(Effect.provide(sql), Effect.orDie)
      violations.push(...(yield* checkInvariants({
        expected: onChain,
        chains: direct,
        webhooks: { received: receiver.received, secrets: new Map([[merchant?.merchantId ?? "", merchant?.secret ?? ""]]), destination: receiver.url }
      }).pipe(Effect.provide(sql), Effect.orDie)))
      process.kill(service.pid, "SIGINT")
      yield* Effect.sleep("100 millis")
      yield* Scope.close(scope, Exit.void)
      for (const p of yield* waitUntilNoneUnder(dataDir)) violations.push({ invariant: "no process left behind", detail: `after the last stop: pid ${p.pid} ${p.cmdline}` })
      const lost = payments.length - onChain.length
      const result: ScenarioResult = {
        scenario: "crash points (SIGKILL)",
        faults: options.crashes,
        faultDetail: `${options.crashes} SIGKILLs of the whole service at random moments${lost > 0 ? `; ${lost} payments gone with the devnet's last unsaved moment` : ""}`,
        restarts: options.crashes,
        requestsFuzzed: 0,
        payments: onChain.length,
        violations
      }
      return result
    }
    return yield* Effect.dieMessage("unreachable")
  }).pipe(Effect.scoped)
