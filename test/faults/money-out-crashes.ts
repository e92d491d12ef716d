import { SqlClient } from "@effect/sql"
import { Effect, ExecutionStrategy, Exit, Layer, Schema, Scope } from "effect"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { makeBep20Client } from "../../src/chains/evm/bep20-client.js"
import { makeSolanaClient } from "../../src/chains/solana/solana-client.js"
import { makeTronClient } from "../../src/chains/tron/tron-client.js"
import { payFromCustomer } from "../../src/devnet/devnet-payments.js"
import type { Chain } from "../../src/domain/chain.js"
import { isHexAddress } from "../../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../../src/keys/master-seed.js"
import { LocalSignerLive } from "../../src/keys/signer.js"
import { MoneyDecimal } from "../../src/money.js"
import {
  acceptInvite,
  approveInConsole,
  type ConsoleBrowser,
  inviteInConsole,
  setUpOwner,
  submitInConsole,
  submitPublicForm,
  Unanswered
} from "../console-http.js"
import { asRecord } from "../json.js"
import {
  api,
  devnetsOf,
  processWorkDir,
  readDevnetFile,
  runToExit,
  type ServiceProcess,
  startService,
  until,
  waitUntilNoneUnder,
  withServiceDatabase
} from "../service-process.js"
import { startHostileBalancer, VIEWS } from "./hostile-balancer.js"
import type { Violation } from "./invariants.js"
import { ASSETS, recipient } from "./money-out.js"
import { moneyOutViolations, type Placed } from "./money-out-invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

const PASSWORD = "Correct-Horse-Battery-9"
const CHAINS = ["TRC20", "BEP20", "SOLANA"] as const

/** One thing the workload does; it fails `Unanswered` when the service was not there to answer, and is done again. */
interface Step {
  readonly label: string
  readonly run: (service: ServiceProcess) => Effect.Effect<void, Unanswered>
}

/**
 * A CLI run to its end: done (exit 0) or refused with a reason (exit 2, an operator error) is an answer;
 * anything else (its database gone with a killed service) is tried again.
 */
const cli = (dataDir: string, script: string, args: ReadonlyArray<string>) =>
  Effect.flatMap(runToExit(script, args, dataDir), (done) =>
    done.code === 0 || done.code === 2
      ? Effect.succeed({ refused: done.code === 2, output: done.output })
      : Effect.fail(new Unanswered({ cause: done.output.slice(-500) }))
  )

/** An API call; no answer (the service killed) is `Unanswered`. */
const call = (service: ServiceProcess, method: string, url: string, options: Parameters<typeof api>[3] = {}) =>
  api(service, method, url, options).pipe(
    Effect.sandbox,
    Effect.mapError((cause) => new Unanswered({ cause }))
  )

/**
 * Money out behind hostile providers, with the whole service (`npm start`, its embedded PostgreSQL and
 * devnets) SIGKILLed at seeded random moments and started again each time. Each chain's node is one
 * load-balanced URL of honest, lagging, pruned and re-send-refusing views (the service reaches the devnets
 * through them: FACET_DEVNET_VIA_<CHAIN>). While the nodes are hostile, withdrawals are placed, BEP20's gas
 * price triples, the per-withdrawal limit tightens under some, and three approvers approve each from their
 * own console sessions (the operator CLI now and then too) under a quorum of two — and the kills come in
 * the middle of all of it and of the broadcasts that follow. Then the nodes heal and every money-out
 * invariant is checked against the database and the devnets themselves.
 */
export const moneyOutCrashesScenario = (options: {
  readonly withdrawals: number
  readonly crashes: number
  readonly seed: number
}) =>
  Effect.gen(function* () {
    const random = seededRandom(options.seed).fork("money-out-crashes")
    // the pacing of steps (its draws depend on timing, so apart from the seeded plan)
    const jitter = seededRandom(options.seed).fork("pacing")
    const dataDir = `${yield* processWorkDir("facet-faults-money-out-")}/data`
    const devnets = devnetsOf(dataDir)
    const balancers = [
      {
        chain: "TRC20",
        balancer: yield* startHostileBalancer(() => devnets()?.tron.url, "TRC20", random.fork("TRC20"))
      },
      {
        chain: "BEP20",
        balancer: yield* startHostileBalancer(() => devnets()?.bep20.rpcUrl, "BEP20", random.fork("BEP20"))
      },
      {
        chain: "SOLANA",
        balancer: yield* startHostileBalancer(() => devnets()?.solana.rpcUrl, "SOLANA", random.fork("SOLANA"))
      }
    ] as const
    const hostile = (on: boolean) => {
      for (const { balancer } of balancers) {
        balancer.setHostile(on)
        if (!on) balancer.setGasPriceFactor(1n)
      }
    }
    const env = {
      FACET_DEVNET_VIA_TRC20: balancers[0].balancer.url,
      FACET_DEVNET_VIA_BEP20: balancers[1].balancer.url,
      FACET_DEVNET_VIA_SOLANA: balancers[2].balancer.url,
      // a fee above its quote is waited out briefly, a stuck send replaced soon (60 min and 90 s in production)
      FACET_FEE_WAIT_MINUTES: "0.1",
      FACET_FEE_BUMP_AFTER_SECONDS: "3",
      FACET_NODE_TIMEOUT_MS: "3000",
      FACET_CONSOLIDATE_INTERVAL_MS: "1000"
    }
    const violations: Array<Violation> = []
    const placed: Array<Placed> = []
    const counts = { answersLost: 0, refusedApprovals: 0, operatorApprovals: 0 }
    const operatorCli = (args: ReadonlyArray<string>) => cli(dataDir, "custody/withdrawals-cli.ts", args)

    // setup, on the first start, the nodes honest: a merchant with every asset collected, three approvers
    const setUp = (service: ServiceProcess) =>
      Effect.gen(function* () {
        const applied = yield* api(service, "POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Money out ${options.seed}`,
            business_type: "exchange",
            use_case: "payments",
            agree_terms: true,
            contact_email: "ops@money-out.example",
            webhook_url: "https://merchant.example/hooks",
            integration_mode: "exchange_wallet"
          }
        })
        if (applied.status !== 201)
          return yield* Effect.dieMessage(`onboarding refused (${applied.status}): ${JSON.stringify(applied.body)}`)
        const credentials = asRecord(asRecord(applied.body).env)
        const apiKey = String(credentials.FACET_API_KEY)
        const merchantId = String(credentials.FACET_MERCHANT_ID)
        yield* withServiceDatabase(
          dataDir,
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql`UPDATE wallet_asset_policies SET status = 'live', can_withdraw = true, can_collect = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
          )
        )
        const file = yield* readDevnetFile(dataDir)
        const receive: Array<{ asset: (typeof ASSETS)[number]; id: string; walletId: string }> = []
        for (const asset of ASSETS) {
          const created = asRecord(
            (yield* api(service, "POST", "/v1/deposit-addresses", {
              apiKey,
              json: {
                external_user_id: `funding-${asset.chain}-${asset.currency}`,
                chain: asset.chain,
                currency: asset.currency
              }
            })).body
          )
          yield* Effect.orDie(
            payFromCustomer(file, `${asset.chain}-${asset.currency}`, String(created.address), asset.fund)
          )
          receive.push({ asset, id: String(created.id), walletId: String(created.wallet_id) })
        }
        const funded = Effect.forEach(
          receive,
          ({ asset, id, walletId }) =>
            Effect.gen(function* () {
              const key = `${asset.chain}-${asset.currency}`
              yield* until(
                `the ${key} funding to be confirmed`,
                api(service, "GET", `/v1/deposit-addresses/${id}/transactions`, { apiKey }),
                (r) => {
                  const items = asRecord(r.body).items
                  return Array.isArray(items) && items.some((t) => asRecord(t).status === "confirmed")
                }
              )
              if (asset.currency === "BNB") {
                // natives are consolidated by custody itself (the sweep endpoint refuses them)
                yield* until(
                  `${key} to be consolidated`,
                  withServiceDatabase(
                    dataDir,
                    Effect.flatMap(
                      SqlClient.SqlClient,
                      (sql) =>
                        sql<{
                          available: string
                        }>`SELECT available::text FROM merchant_balances WHERE merchant_id = ${merchantId} AND chain = ${asset.chain} AND currency = ${asset.currency}`
                    )
                  ),
                  (rows) =>
                    new MoneyDecimal(rows[0]?.available ?? "0").greaterThan(new MoneyDecimal(asset.fund).mul("0.9"))
                )
                return
              }
              const started = yield* api(service, "POST", `/v1/wallet-assets/${key}/sweep`, {
                apiKey,
                json: { from_wallet_id: walletId }
              })
              const operation = String(asRecord(started.body).operation_id)
              const done = yield* until(
                `the ${key} sweep`,
                api(service, "GET", `/v1/wallet-assets/${key}/sweeps/${operation}`, { apiKey }),
                (r) => ["COMPLETED", "FAILED"].includes(String(asRecord(r.body).status))
              )
              if (asRecord(done.body).status !== "COMPLETED")
                return yield* Effect.dieMessage(`the ${key} sweep did not complete: ${JSON.stringify(done.body)}`)
            }),
          { concurrency: "unbounded" }
        )
        // the approvers, invited while the funding confirms
        const approvers = Effect.gen(function* () {
          // the owner binds the console with onboarding's one-time token, invites three approvers and sets
          // the quorum, all in the console as a merchant does
          const consoleToken = String(asRecord(asRecord(applied.body).merchant_console).console_token)
          const owner = yield* setUpOwner(service, consoleToken, "mo-owner", PASSWORD).pipe(Effect.orDie)
          const browsers: Array<ConsoleBrowser> = []
          for (const login of ["mo-alice", "mo-bob", "mo-carol"]) {
            const token = yield* inviteInConsole(service, owner, login, "approver").pipe(Effect.orDie)
            browsers.push(yield* acceptInvite(service, login, token, PASSWORD).pipe(Effect.orDie))
          }
          // they joined before this run: their approval right's cooling-off (tested on its own) is behind them
          yield* withServiceDatabase(
            dataDir,
            Effect.flatMap(
              SqlClient.SqlClient,
              (sql) =>
                sql`UPDATE console_users SET approver_from = now() - interval '2 days' WHERE merchant_id = ${merchantId}`
            )
          )
          const quorum = yield* submitInConsole(service, owner, "/console/policy", {
            password: PASSWORD,
            quorum: "2"
          }).pipe(Effect.orDie)
          if (quorum.status !== 200)
            return yield* Effect.dieMessage(`the quorum was not set (${quorum.status}): ${quorum.notice}`)
          return { owner, browsers }
        })
        // an order paid in TRC20 USDT, for the workload's refund (refunds leave from `available`, funded above)
        const paidOrder = Effect.gen(function* () {
          const created = yield* api(service, "POST", "/v1/orders", {
            apiKey,
            json: { amount: "8", chain: "TRC20", currency: "USDT", expire_minutes: 60 }
          })
          if (created.status !== 201)
            return yield* Effect.dieMessage(
              `the order was refused (${created.status}): ${JSON.stringify(created.body)}`
            )
          const order = asRecord(created.body)
          yield* Effect.orDie(payFromCustomer(file, "TRC20-USDT", String(order.pay_address), "8"))
          yield* until(
            "the order to be PAID",
            api(service, "GET", `/v1/orders/${String(order.order_id)}`, { apiKey }),
            (r) => asRecord(r.body).status === "PAID"
          )
          return String(order.order_id)
        })
        const [, { owner, browsers }, orderId] = yield* Effect.all([funded, approvers, paidOrder], {
          concurrency: 3
        })
        return { apiKey, merchantId, owner, browsers, orderId }
      })

    // the workload, in phases: place every withdrawal; then the gas jump and the tightened limit; then a
    // first approval of each (the operator's now and then), then the other approvers' at once
    const workload = (
      apiKey: string,
      owner: ConsoleBrowser,
      browsers: ReadonlyArray<ConsoleBrowser>,
      orderId: string
    ) => {
      const firstApprovals: Array<Step> = []
      const racingApprovals: Array<Step> = []
      const inConsole = (
        browser: ConsoleBrowser,
        id: string,
        what: "withdrawals" | "batches" = "withdrawals"
      ): Step => ({
        label: `${browser.login} approves ${id}`,
        run: (service) =>
          Effect.map(approveInConsole(service, browser, id, what), (answer) => {
            if (answer.status >= 500)
              violations.push({
                invariant: "no 5xx",
                detail: `${browser.login} approving ${id}: ${answer.status} ${answer.notice}`
              })
            if (answer.status === 403 || answer.status === 409) counts.refusedApprovals += 1
          })
      })
      const byOperator = (w: Placed): Step => ({
        label: `the operator approves ${w.id}`,
        // a refusal (the quorum already met, the policy forbids it) is an answer too
        run: () =>
          Effect.map(operatorCli(["approve", w.id, "--by", "campaign-ops"]), (done) => {
            if (done.refused) counts.refusedApprovals += 1
            else counts.operatorApprovals += 1
          })
      })
      const placements = Array.from({ length: options.withdrawals }, (_, i): Step => {
        const asset = random.pick(ASSETS)
        const forbidden = random.next() < 0.25
        const operatorFirst = random.next() < 0.3
        const to = recipient(asset.chain)
        const key = `money-out-${options.seed}-${i}`
        let asked = false
        return {
          label: `withdrawal ${i}`,
          run: (service) =>
            Effect.gen(function* () {
              if (asked) counts.answersLost += 1
              asked = true
              const created = yield* call(service, "POST", "/v1/withdrawals", {
                apiKey,
                headers: { "x-service-idempotency-key": key },
                json: {
                  chain: asset.chain,
                  currency: asset.currency,
                  amount: forbidden ? asset.large : asset.amount,
                  to_address: to,
                  out_withdrawal_no: key
                }
              })
              if (created.status === 503) return yield* new Unanswered({ cause: "503" })
              if (created.status >= 500)
                violations.push({
                  invariant: "no 5xx",
                  detail: `POST /v1/withdrawals ${created.status} ${JSON.stringify(created.body)}`
                })
              if (created.status !== 201) return
              const w: Placed = {
                id: String(asRecord(created.body).withdrawal_id),
                chain: asset.chain,
                currency: asset.currency,
                to,
                forbidden
              }
              if (placed.some((p) => p.id === w.id)) return
              placed.push(w)
              const [first, ...others] = browsers
              if (operatorFirst || first === undefined) {
                firstApprovals.push(byOperator(w))
                racingApprovals.push(...browsers.map((b) => inConsole(b, w.id)))
              } else {
                firstApprovals.push(inConsole(first, w.id))
                racingApprovals.push(...others.map((b) => inConsole(b, w.id)))
              }
            })
        }
      })
      // one batch with an item of every asset, to fresh payees: admitted whole, approved once as a whole by
      // the same quorum from the approvers' console sessions, each item then sent like any withdrawal
      const batchItems = ASSETS.map((asset, i) => ({
        asset,
        to: recipient(asset.chain),
        ref: `money-out-${options.seed}-batch-${i}`
      }))
      let batchAsked = false
      const batchPlacement: Step = {
        label: "a withdrawal batch",
        run: (service) =>
          Effect.gen(function* () {
            if (batchAsked) counts.answersLost += 1
            batchAsked = true
            const created = yield* call(service, "POST", "/v1/withdrawal-batches", {
              apiKey,
              headers: { "x-service-idempotency-key": `money-out-${options.seed}-batch` },
              json: {
                items: batchItems.map(({ asset, to, ref }) => ({
                  chain: asset.chain,
                  currency: asset.currency,
                  amount: asset.amount,
                  to_address: to,
                  out_withdrawal_no: ref
                }))
              }
            })
            if (created.status === 503) return yield* new Unanswered({ cause: "503" })
            if (created.status >= 500) {
              violations.push({
                invariant: "no 5xx",
                detail: `POST /v1/withdrawal-batches ${created.status} ${JSON.stringify(created.body)}`
              })
              return
            }
            if (created.status !== 201)
              return yield* Effect.dieMessage(
                `POST /v1/withdrawal-batches ${created.status} ${JSON.stringify(created.body)}`
              )
            const batchId = String(asRecord(created.body).batch_id)
            const listed = yield* call(service, "GET", `/v1/withdrawal-batches/${batchId}/items`, { apiKey })
            if (listed.status !== 200) return yield* new Unanswered({ cause: `items: ${listed.status}` })
            const items = asRecord(listed.body).items
            for (const raw of Array.isArray(items) ? items : []) {
              const item = asRecord(raw)
              const mine = batchItems.find((b) => b.ref === item.out_withdrawal_no)
              if (mine === undefined || placed.some((p) => p.id === String(item.withdrawal_id))) continue
              placed.push({
                id: String(item.withdrawal_id),
                chain: mine.asset.chain,
                currency: mine.asset.currency,
                to: mine.to,
                forbidden: false
              })
            }
            const [first, ...others] = browsers
            if (first !== undefined && !firstApprovals.some((step) => step.label.endsWith(batchId))) {
              firstApprovals.push(inConsole(first, batchId, "batches"))
              racingApprovals.push(...others.map((b) => inConsole(b, batchId, "batches")))
            }
          })
      }
      // a refund of part of the paid order: its amount locked, claimed by the customer on the claim page to a
      // fresh address, its withdrawal approved like any other (quorum of two) and sent
      const refundTo = recipient("TRC20")
      let refundAsked = false
      const refund: Step = {
        label: "a refund",
        run: (service) =>
          Effect.gen(function* () {
            if (refundAsked) counts.answersLost += 1
            refundAsked = true
            // a replay answers the same refund with a new claim link (the earlier one stops working)
            const created = yield* call(service, "POST", `/v1/orders/${orderId}/refunds`, {
              apiKey,
              headers: { "x-service-idempotency-key": `money-out-${options.seed}-refund` },
              json: { amount: "3", reason: "returned goods" }
            })
            if (created.status === 503) return yield* new Unanswered({ cause: "503" })
            if (created.status >= 500) {
              violations.push({
                invariant: "no 5xx",
                detail: `POST /v1/orders/{id}/refunds ${created.status} ${JSON.stringify(created.body)}`
              })
              return
            }
            if (created.status !== 201)
              return yield* Effect.dieMessage(
                `the refund was refused (${created.status}): ${JSON.stringify(created.body)}`
              )
            const refundId = String(asRecord(created.body).refund_id)
            const claimUrl = asRecord(created.body).claim_url
            if (asRecord(created.body).status === "PENDING_CLAIM" && typeof claimUrl === "string") {
              const claimed = yield* submitPublicForm(service, new URL(claimUrl).pathname, {
                address: refundTo,
                own_address: "yes"
              })
              if (claimed.status >= 500 && claimed.status !== 503)
                violations.push({ invariant: "no 5xx", detail: `the refund claim: ${claimed.status}` })
              if (claimed.status !== 303 && claimed.status !== 409)
                return yield* new Unanswered({ cause: `the claim answered ${claimed.status}` })
            }
            const read = yield* call(service, "GET", `/v1/refunds/${refundId}`, { apiKey })
            const withdrawalId = asRecord(read.body).withdrawal_id
            if (read.status !== 200 || typeof withdrawalId !== "string")
              return yield* new Unanswered({ cause: `the refund is not claimed yet: ${JSON.stringify(read.body)}` })
            if (placed.some((p) => p.id === withdrawalId)) return
            placed.push({ id: withdrawalId, chain: "TRC20", currency: "USDT", to: refundTo, forbidden: false })
            const [first, ...others] = browsers
            if (first !== undefined) {
              firstApprovals.push(inConsole(first, withdrawalId))
              racingApprovals.push(...others.map((b) => inConsole(b, withdrawalId)))
            }
          })
      }
      const between: ReadonlyArray<Step> = [
        {
          label: "BEP20's gas price triples",
          run: () => Effect.sync(() => balancers[1].balancer.setGasPriceFactor(3n))
        },
        {
          label: "the per-withdrawal limit tightens",
          // by the owner in the console, one asset at a time as its form asks
          run: (service) =>
            Effect.forEach(
              ASSETS,
              (a) =>
                Effect.flatMap(
                  submitInConsole(service, owner, "/console/policy", {
                    password: PASSWORD,
                    asset: `${a.chain}-${a.currency}`,
                    per_tx: new MoneyDecimal(a.large).div(2).toFixed()
                  }),
                  (answer) =>
                    answer.status === 200
                      ? Effect.void
                      : Effect.dieMessage(
                          `the limit on ${a.chain}-${a.currency} was not set (${answer.status}): ${answer.notice}`
                        )
                ),
              { discard: true }
            )
        }
      ]
      return [[...placements, batchPlacement, refund], [...between], firstApprovals, racingApprovals]
    }

    /** Runs the phases' steps in order (a phase's steps eight at once) until all are done or the service stops answering. */
    const runPhases = (phases: ReadonlyArray<Array<Step>>, service: ServiceProcess) =>
      Effect.gen(function* () {
        for (const phase of phases) {
          while (phase.length > 0) {
            const batch = phase.slice(0, 8)
            // each step a moment apart, so a kill can come between any two
            const results = yield* Effect.forEach(
              batch,
              (step, i) =>
                Effect.either(Effect.zipRight(Effect.sleep(`${i * (50 + jitter.int(150))} millis`), step.run(service))),
              { concurrency: "unbounded" }
            )
            batch.forEach((step, i) => {
              const result = results[i]
              if (result?._tag === "Right") phase.splice(phase.indexOf(step), 1)
              else if (result !== undefined) lastRefusal.set(step.label, String(result.left.cause).slice(0, 300))
            })
            if (results.some((r) => r._tag === "Left")) {
              // not answered: the service is gone (the kill comes) or busy; the step is done again
              yield* Effect.sleep("300 millis")
            }
          }
        }
      })

    /** Why each step not done yet was not answered, the last time it was tried (said if the run does not converge). */
    const lastRefusal = new Map<string, string>()
    let phases: ReadonlyArray<Array<Step>> = []
    let merchant: { apiKey: string; merchantId: string } | undefined
    for (let round = 0; round <= options.crashes; round++) {
      // a round's scope closes with the scenario's if the round fails: its service is stopped either way
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const service = yield* startService(dataDir, `run-${round}`, env).pipe(Scope.extend(scope))
      if (merchant === undefined) {
        const set = yield* setUp(service)
        merchant = { apiKey: set.apiKey, merchantId: set.merchantId }
        phases = workload(set.apiKey, set.owner, set.browsers, set.orderId)
      }
      if (round < options.crashes) {
        hostile(true)
        // the workload (or the broadcasts once it is done) runs until the kill comes, at a random moment
        yield* Effect.race(
          Effect.zipRight(runPhases(phases, service), Effect.never),
          Effect.sleep(`${2_000 + random.int(8_000)} millis`)
        )
        process.kill(service.pid, "SIGKILL")
        for (const p of yield* waitUntilNoneUnder(dataDir))
          violations.push({
            invariant: "no process left behind",
            detail: `after SIGKILL ${round + 1}: pid ${p.pid} ${p.cmdline}`
          })
        yield* Scope.close(scope, Exit.void)
        continue
      }
      // the last start: what the kills left undone is done, the nodes heal, every approved withdrawal ends
      yield* runPhases(phases, service).pipe(
        Effect.timeoutFail({
          duration: "180 seconds",
          onTimeout: () => new Unanswered({ cause: "the workload did not finish" })
        }),
        Effect.catchAll(() =>
          Effect.dieMessage(
            `the workload did not finish once the service stayed up: ${phases
              .flat()
              .map((step) => `${step.label}: ${lastRefusal.get(step.label) ?? "never tried"}`)
              .join("; ")}`
          )
        )
      )
      yield* Effect.sleep("3 seconds")
      hostile(false)
      const { merchantId } = merchant
      // (one still open after that is a violation the invariants name)
      yield* until(
        "every approved withdrawal to end",
        withServiceDatabase(
          dataDir,
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<{
                n: number
              }>`SELECT count(*)::int AS n FROM withdrawals WHERE merchant_id = ${merchantId} AND status IN ('APPROVED', 'BROADCAST')`
          )
        ),
        (rows) => (rows[0]?.n ?? 0) === 0,
        180_000
      ).pipe(Effect.catchAllDefect(() => Effect.void))

      // the invariants, read past the balancers: the devnets' own answers
      const file = yield* readDevnetFile(dataDir)
      const direct: ReadonlyArray<ChainClient> = yield* Effect.all([
        makeTronClient({ url: file.tron.url, tokens: new Map([["USDT", file.tron.tokens.USDT]]), confirmations: 3 }),
        makeBep20Client({
          rpcUrl: file.bep20.rpcUrl,
          chainId: file.bep20.chainId,
          tokens: new Map(isHexAddress(file.bep20.tokens.USDT) ? [["USDT", file.bep20.tokens.USDT]] : []),
          confirmations: 2,
          traces: "off"
        }),
        makeSolanaClient({
          rpcUrl: file.solana.rpcUrl,
          tokens: new Map([["USDT", { mint: file.solana.tokens.USDT, decimals: 6 }]])
        })
      ]).pipe(
        Effect.provide(
          LocalSignerLive.pipe(
            Layer.provide(
              masterSeedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow")
            )
          )
        )
      )
      const reconciled = yield* runToExit("indexer/reconcile-cli.ts", [], dataDir)
      const reports = reconciled.output
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => Schema.decodeUnknownSync(Schema.parseJson(ReconcileLine))(line))
      if (reports.length !== CHAINS.length)
        violations.push({
          invariant: "ledger equals chain for every address custody touched",
          detail: `npm run reconcile did not report every chain (exit ${reconciled.code}): ${reconciled.output.slice(-500)}`
        })
      const checked = yield* withServiceDatabase(
        dataDir,
        moneyOutViolations({
          merchantId,
          placed,
          held: (chain: Chain, address, currency) => {
            const client = direct.find((c) => c.chain === chain)
            return client === undefined
              ? Effect.either(Effect.fail(`no ${chain} client`))
              : Effect.either(client.balance(address, currency))
          },
          differences: Effect.succeed(reports.flatMap((r) => r.differences.map((d) => ({ chain: r.chain, ...d }))))
        })
      )
      violations.push(...checked.violations)
      yield* Scope.close(scope, Exit.void)
      for (const p of yield* waitUntilNoneUnder(dataDir))
        violations.push({
          invariant: "no process left behind",
          detail: `after the last stop: pid ${p.pid} ${p.cmdline}`
        })
      const served = new Map<string, number>()
      for (const { balancer } of balancers)
        for (const [view, n] of balancer.served()) served.set(view, (served.get(view) ?? 0) + n)
      const hostileCalls = VIEWS.filter((v) => v !== "honest").reduce((s, v) => s + (served.get(v) ?? 0), 0)
      return {
        scenario: `money out, SIGKILLed behind load-balanced bad nodes (${checked.outcomes})`,
        faults: hostileCalls + options.crashes,
        faultDetail:
          `${options.crashes} SIGKILLs of the whole service; node calls: ${VIEWS.filter((v) => v !== "honest")
            .map((v) => `${v} ${served.get(v) ?? 0}`)
            .join(", ")}; ` +
          `${counts.answersLost} withdrawal requests asked again after a kill swallowed the answer, ${counts.refusedApprovals} approvals refused (the policy, or already decided), ${counts.operatorApprovals} operator approvals`,
        restarts: options.crashes,
        requestsFuzzed: 0,
        payments: placed.length,
        violations
      } satisfies ScenarioResult
    }
    return yield* Effect.dieMessage("unreachable")
  }).pipe(Effect.scoped)

/** One line of `npm run reconcile`'s output. */
const ReconcileLine = Schema.Struct({
  chain: Schema.String,
  differences: Schema.Array(
    Schema.Struct({
      address: Schema.String,
      currency: Schema.String,
      on_chain: Schema.String,
      explained: Schema.String
    })
  )
})
