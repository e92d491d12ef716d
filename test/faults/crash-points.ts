import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Effect, ExecutionStrategy, Exit, Layer, Option, Scope } from "effect"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { makeBep20Client } from "../../src/chains/evm/bep20-client.js"
import { makeSolanaClient } from "../../src/chains/solana/solana-client.js"
import { makeTronClient } from "../../src/chains/tron/tron-client.js"
import { runningEmbeddedUrl } from "../../src/database/embedded-postgres.js"
import { DECIMALS, payFromCustomer } from "../../src/devnet/devnet-payments.js"
import type { DevnetFile } from "../../src/devnet/devnets.js"
import { evmAddress, isHexAddress, tronAddress } from "../../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../../src/keys/master-seed.js"
import { LocalSignerLive } from "../../src/keys/signer.js"
import { asRecord } from "../json.js"
import {
  api,
  processWorkDir,
  readDevnetFile,
  runToExit,
  type ServiceProcess,
  startService,
  waitUntilNoneUnder
} from "../service-process.js"
import { startDocumentedReceiver } from "./documented-receiver.js"
import { checkFulfilment, type DustPayment, fulfilmentDetail } from "./fulfilment-invariants.js"
import { checkInvariants, type ExpectedDeposit, type Violation } from "./invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { type Random, seededRandom } from "./seeded-random.js"

const ASSETS = [
  ["TRC20", "TRC20-USDT"],
  ["BEP20", "BEP20-USDT"],
  ["SOLANA", "SOLANA-USDT"]
] as const
/** Solana's USDT is deposit_live (docs/reference/decisions.md): no checkout orders, sweeps or withdrawals on it. */
const LIVE = ASSETS.slice(0, 2)

/** Fresh recipients of withdrawals, one per live chain, made from the seed: nobody else ever pays them. */
const payees = (random: Random): Record<string, string> => {
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => random.int(256))
  return { TRC20: tronAddress(bytes(20)), BEP20: evmAddress(bytes(20)) }
}

/** The precision orders in USDT are shown at (wallet_asset_policies.amount_precision of TRC20 and BEP20 USDT). */
const USDT_PRECISION = 6

/** A checkout order the workload paid exactly, and the dust its customer sends once it is PAID (seeded). */
interface CheckoutOrder {
  readonly id: string
  readonly chain: string
  readonly asset: string
  readonly payAddress: string
  /** The payment that paid it exactly. */
  readonly payTx: string
  /** The dust payments planned, as decimals: one base unit or a few (on BEP20 sometimes a few at the shown precision). */
  dust: ReadonlyArray<string>
  sent: number
}

/** `units` base units of an asset with `decimals`, as a decimal. */
const baseUnits = (units: number, decimals: number) => `0.${String(units).padStart(decimals, "0")}`

/**
 * The dust a customer (or anyone: the pay address is public) sends after PAID: once or twice for 60% of
 * orders. One to three base units each; on BEP20 USDT (18 decimals, orders shown at 6) that is below what an
 * order shows, so a second one there is one to three units of the shown precision instead: both an
 * overpayment the order cannot show and one it shows are met.
 */
const planDust = (random: Random, asset: string): ReadonlyArray<string> => {
  if (random.next() < 0.4) return []
  const decimals = DECIMALS[asset] ?? 6
  const first = baseUnits(1 + random.int(3), decimals)
  return random.next() < 0.5 ? [first] : [first, baseUnits(1 + random.int(3), Math.min(decimals, USDT_PRECISION))]
}

/** A withdrawal the workload asked for: kept with its idempotency key, so one whose answer a kill swallowed is asked again. */
interface WithdrawalAttempt {
  readonly key: string
  readonly body: {
    readonly chain: string
    readonly currency: string
    readonly amount: string
    readonly to_address: string
    readonly out_withdrawal_no: string
  }
  id: string | undefined
}

/**
 * Crash points: the whole service (`npm start` on its embedded PostgreSQL and devnets) is SIGKILLed at
 * seeded random moments while a workload creates deposit addresses and orders, pays them on all three
 * chains, sweeps paid addresses into the main wallet and withdraws to outside addresses (auto-approved by
 * the operator's policy), and started again each time. After every kill nothing it started may still
 * run; at the end every payment the chains hold is credited exactly once, every payee holds exactly what
 * its completed withdrawals sent, every event was delivered with its bytes and signature.
 */
export const crashPointsScenario = (options: {
  readonly crashes: number
  readonly seed: number
  /** Checkout orders the workload has paid at least by its last run (each may get dust after PAID). */
  readonly orders: number
  /** Share of deliveries the merchant's receiver fails (a 500, a connection cut before or after processing). */
  readonly receiverFaultRate: number
}) =>
  Effect.gen(function* () {
    const random = seededRandom(options.seed).fork("crashes")
    const dustRandom = seededRandom(options.seed).fork("dust")
    const payee = payees(seededRandom(options.seed).fork("payees"))
    const dataDir = `${yield* processWorkDir("facet-faults-crash-")}/data`
    const receiver = yield* startDocumentedReceiver({
      random: seededRandom(options.seed).fork("receiver"),
      rate: options.receiverFaultRate,
      maxFailures: 2
    })
    const violations: Array<Violation> = []
    const payments: Array<ExpectedDeposit> = []
    let merchant: { apiKey: string; merchantId: string; secret: string } | undefined
    const addresses: Array<{ chain: string; asset: string; address: string; walletId: string }> = []
    const paid: Array<{ chain: string; asset: string; walletId: string }> = []
    const withdrawals: Array<WithdrawalAttempt> = []
    const orders: Array<CheckoutOrder> = []
    const dust: Array<DustPayment> = []
    const counts = { orders: 0, sweeps: 0, withdrawals: 0, withdrawalsRefused: 0, withdrawalRetries: 0 }

    // onboarding, and the operator's auto-approval so withdrawals need no human in the loop
    const onboard = (service: ServiceProcess) =>
      Effect.gen(function* () {
        const env = asRecord(
          asRecord(
            (yield* api(service, "POST", "/v1/ai/merchant-apply", {
              json: {
                project_name: `Crash points ${options.seed}`,
                business_type: "exchange",
                use_case: "payments",
                agree_terms: true,
                contact_email: "ops@faults.example",
                webhook_url: receiver.url,
                integration_mode: "exchange_wallet"
              }
            })).body
          ).env
        )
        const onboarded = {
          apiKey: String(env.FACET_API_KEY),
          merchantId: String(env.FACET_MERCHANT_ID),
          secret: String(env.FACET_WEBHOOK_SECRET)
        }
        receiver.setSecret(onboarded.secret)
        for (const [, asset] of LIVE) {
          const set = yield* runToExit(
            "custody/withdrawals-cli.ts",
            [
              "auto-approve",
              "--merchant",
              onboarded.merchantId,
              "--asset",
              asset,
              "--daily",
              "1000000",
              "--by",
              "ops@faults"
            ],
            dataDir
          )
          if (set.code !== 0) return yield* Effect.dieMessage(`auto-approve ${asset}: ${set.output}`)
        }
        return onboarded
      })

    // a withdrawal, asked for with its key; answered or not, the same key and body are asked again later
    const withdraw = (service: ServiceProcess, apiKey: string, attempt: WithdrawalAttempt) =>
      Effect.gen(function* () {
        const answer = yield* api(service, "POST", "/v1/withdrawals", {
          apiKey,
          json: attempt.body,
          headers: { "x-service-idempotency-key": attempt.key }
        })
        if (answer.status === 201) {
          const id = String(asRecord(answer.body).withdrawal_id)
          if (attempt.id !== undefined && attempt.id !== id)
            violations.push({
              invariant: "one withdrawal per idempotency key",
              detail: `${attempt.key}: ${attempt.id}, then ${id}`
            })
          attempt.id = id
        } else if (answer.status >= 500) {
          violations.push({
            invariant: "no 5xx",
            detail: `POST /v1/withdrawals ${answer.status} ${JSON.stringify(answer.body)}`
          })
        } else if (answer.status !== 503) {
          // not enough collected yet, and the like: a clear 4xx that locks nothing
          attempt.id = "refused"
          counts.withdrawalsRefused += 1
        }
      })

    // a checkout order on a live asset, paid exactly; its dust after PAID planned
    const checkoutOrder = (
      service: ServiceProcess,
      file: DevnetFile,
      pick: Random,
      [chain, asset]: (typeof LIVE)[number] = pick.pick(LIVE)
    ) =>
      Effect.gen(function* () {
        const amount = `${5 + pick.int(20)}.${pick.int(100).toString().padStart(2, "0")}`
        const order = yield* api(service, "POST", "/v1/orders", {
          apiKey: merchant?.apiKey ?? "",
          json: { amount, chain, currency: "USDT", out_trade_no: `crash-${options.seed}-${counts.orders}` }
        })
        counts.orders += 1
        const to = String(asRecord(order.body).pay_address ?? "")
        if (order.status !== 201 || to === "") return
        const sent = yield* Effect.either(payFromCustomer(file, asset, to, amount))
        if (sent._tag === "Left") return
        payments.push({ chain, txHash: sent.right, to, amount })
        const id = String(asRecord(order.body).order_id)
        orders.push({ id, chain, asset, payAddress: to, payTx: sent.right, dust: planDust(dustRandom, asset), sent: 0 })
      })

    // the order's remaining dust, once it is PAID (the API says so): true when it was PAID
    const sendDust = (service: ServiceProcess, file: DevnetFile, order: CheckoutOrder) =>
      Effect.gen(function* () {
        const read = yield* api(service, "GET", `/v1/orders/${order.id}`, { apiKey: merchant?.apiKey ?? "" })
        if (asRecord(read.body).status !== "PAID") return false
        for (const amount of order.dust.slice(order.sent)) {
          const sent = yield* Effect.either(payFromCustomer(file, order.asset, order.payAddress, amount))
          order.sent += 1
          if (sent._tag === "Left") continue
          payments.push({ chain: order.chain, txHash: sent.right, to: order.payAddress, amount })
          dust.push({
            orderId: order.id,
            chain: order.chain,
            txHash: sent.right,
            to: order.payAddress,
            amount,
            decimals: DECIMALS[order.asset] ?? 6,
            precision: USDT_PRECISION
          })
        }
        return true
      })

    const workload = (service: ServiceProcess, file: DevnetFile, until: number) =>
      Effect.gen(function* () {
        const apiKey = merchant?.apiKey ?? ""
        // what the last kill swallowed is asked again, with the same key
        for (const attempt of withdrawals.filter((w) => w.id === undefined)) {
          counts.withdrawalRetries += 1
          yield* withdraw(service, apiKey, attempt)
        }
        while (Date.now() < until) {
          const action = random.next()
          if (addresses.length < 6 || action < 0.15) {
            const [chain, asset] = random.pick(ASSETS)
            const created = yield* api(service, "POST", "/v1/deposit-addresses", {
              apiKey,
              json: { external_user_id: `user-${addresses.length}`, chain, currency: "USDT" }
            })
            if (created.status === 201)
              addresses.push({
                chain,
                asset,
                address: String(asRecord(created.body).address),
                walletId: String(asRecord(created.body).wallet_id)
              })
            continue
          }
          if (action < 0.2) {
            yield* checkoutOrder(service, file, random)
            continue
          }
          const sweepable = paid.filter((p) => LIVE.some(([chain]) => chain === p.chain))
          if (action < 0.28 && sweepable.length > 0) {
            const from = random.pick(sweepable)
            const started = yield* api(service, "POST", `/v1/wallet-assets/${from.asset}/sweep`, {
              apiKey,
              json: { from_wallet_id: from.walletId }
            })
            if (started.status === 200) counts.sweeps += 1
            continue
          }
          if (action < 0.36) {
            const [chain] = random.pick(LIVE)
            const key = `crash-wd-${options.seed}-${withdrawals.length}`
            const attempt: WithdrawalAttempt = {
              key,
              body: {
                chain,
                currency: "USDT",
                amount: `${1 + random.int(3)}.${random.int(100).toString().padStart(2, "0")}`,
                to_address: payee[chain] ?? "",
                out_withdrawal_no: key
              },
              id: undefined
            }
            withdrawals.push(attempt)
            counts.withdrawals += 1
            yield* withdraw(service, apiKey, attempt)
            continue
          }
          // dust after PAID to an order owed some (not yet PAID: the next time)
          const dusty = orders.filter((o) => o.sent < o.dust.length)
          if (action < 0.4 && dusty.length > 0) {
            yield* sendDust(service, file, random.pick(dusty))
            continue
          }
          const target = random.pick(addresses)
          // up to a few hundred: a TRON sweep is refused while its gas is over 5% of the value
          const amount = `${1 + random.int(300)}.${random.int(100).toString().padStart(2, "0")}`
          const sent = yield* Effect.either(payFromCustomer(file, target.asset, target.address, amount))
          if (sent._tag === "Right") {
            payments.push({ chain: target.chain, txHash: sent.right, to: target.address, amount })
            paid.push({ chain: target.chain, asset: target.asset, walletId: target.walletId })
          }
          yield* Effect.sleep(`${100 + random.int(400)} millis`)
        }
      })

    for (let round = 0; round <= options.crashes; round++) {
      // a round's scope closes with the scenario's if the round fails: its service is stopped either way
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      // the receiver's retries come soon (10 s → 0.5 s, 30 s → 1.5 s, 2 min → 6 s, …)
      const service = yield* startService(dataDir, `run-${round}`, { FACET_WEBHOOK_RETRY_SCALE: "0.05" }).pipe(
        Scope.extend(scope)
      )
      const file = yield* readDevnetFile(dataDir)
      if (merchant === undefined) merchant = yield* onboard(service)
      if (round < options.crashes) {
        // the workload runs until the kill comes, at a random moment
        yield* workload(service, file, Date.now() + 1_000 + random.int(5_000)).pipe(
          Effect.catchAllDefect(() => Effect.void)
        )
        process.kill(service.pid, "SIGKILL")
        const left = yield* waitUntilNoneUnder(dataDir)
        for (const p of left)
          violations.push({
            invariant: "no process left behind",
            detail: `after SIGKILL ${round + 1}: pid ${p.pid} ${p.cmdline}`
          })
        yield* Scope.close(scope, Exit.void)
        continue
      }
      // the last run: the chains read directly, to see what the last kill took
      const apiKey = merchant?.apiKey ?? ""
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
      const held = (chain: string, txHash: string) =>
        Effect.map(
          Effect.option(direct.find((c) => c.chain === chain)?.transaction(txHash) ?? Effect.succeedNone),
          (found) => Option.exists(Option.flatten(found), (t) => t.status === "success")
        )
      // a payment sent just before a kill may be gone with the devnet's unsaved last moment: only what the chain
      // holds now counts; everything sent from here on must be credited (read now, before it is mined, a payment
      // of this run would look gone)
      const gone = new Set(
        (yield* Effect.filter(payments, (p) => Effect.map(held(p.chain, p.txHash), (h) => !h))).map((p) => p.txHash)
      )
      // the checkout orders the run must have (their dust after PAID follows)
      const topUp = seededRandom(options.seed).fork("orders")
      const fewest = () =>
        LIVE.reduce((a, b) =>
          orders.filter((o) => o.chain === b[0]).length < orders.filter((o) => o.chain === a[0]).length ? b : a
        )
      while (orders.length < options.orders) yield* checkoutOrder(service, file, topUp, fewest())
      // dust on each chain in every run: an order of each gets one base unit if none was planned there
      for (const [chain, asset] of LIVE) {
        const first = orders.find((o) => o.chain === chain && !gone.has(o.payTx))
        if (first !== undefined && !orders.some((o) => o.chain === chain && o.dust.length > 0))
          first.dust = [baseUnits(1, DECIMALS[asset] ?? 6)]
      }
      yield* workload(service, file, Date.now() + 3_000)
      // every order still owed its dust gets it once PAID (one whose payment a kill took never is); then converge
      const dustDeadline = Date.now() + 60_000
      for (const order of orders.filter((o) => !gone.has(o.payTx)))
        while (order.sent < order.dust.length && Date.now() < dustDeadline)
          if (!(yield* sendDust(service, file, order))) yield* Effect.sleep("250 millis")
      const onChain = payments.filter((p) => !gone.has(p.txHash))
      const confirmed = (p: ExpectedDeposit) =>
        Effect.map(
          api(service, "GET", `/v1/transactions?q=${p.txHash}&status=confirmed&type=deposit`, { apiKey }),
          (r) => Number(asRecord(r.body).total) >= 1
        )
      const started = Date.now()
      while (Date.now() - started < 120_000 && !(yield* Effect.forEach(onChain, confirmed)).every(Boolean))
        yield* Effect.sleep("1 second")
      const url = runningEmbeddedUrl(dataDir)
      if (Option.isNone(url)) return yield* Effect.dieMessage("the service's PostgreSQL is not running")
      const sql = Layer.provide(PgClient.layer({ url: url.value, maxConnections: 2 }), Reactivity.layer)
      const waitFor = (what: string, query: string) =>
        Effect.gen(function* () {
          const pg = yield* PgClient.PgClient
          for (let i = 0; i < 240; i++) {
            const [row] = yield* pg.unsafe<{ n: number }>(query)
            if ((row?.n ?? 0) === 0) return
            yield* Effect.sleep("500 millis")
          }
          violations.push({ invariant: "the run converges", detail: `still waiting for ${what} after 120 s` })
        }).pipe(Effect.provide(sql), Effect.orDie)
      const inFlight = "SELECT count(*)::int AS n FROM custody_operations WHERE status NOT IN ('COMPLETED', 'FAILED')"
      // every run moves money out: the last one sweeps every paid address and withdraws on each chain
      for (const from of new Map(
        paid.filter((p) => LIVE.some(([chain]) => chain === p.chain)).map((p) => [p.walletId, p])
      ).values()) {
        const started = yield* api(service, "POST", `/v1/wallet-assets/${from.asset}/sweep`, {
          apiKey,
          json: { from_wallet_id: from.walletId }
        })
        if (started.status === 200) counts.sweeps += 1
      }
      yield* waitFor("sweeps in flight", inFlight)
      for (const [chain] of LIVE) {
        const key = `crash-wd-${options.seed}-${withdrawals.length}`
        const attempt: WithdrawalAttempt = {
          key,
          body: { chain, currency: "USDT", amount: "1.5", to_address: payee[chain] ?? "", out_withdrawal_no: key },
          id: undefined
        }
        withdrawals.push(attempt)
        counts.withdrawals += 1
        yield* withdraw(service, apiKey, attempt)
      }
      yield* waitFor(
        "withdrawals to settle",
        "SELECT count(*)::int AS n FROM withdrawals WHERE status IN ('PENDING', 'APPROVED', 'BROADCAST')"
      )
      yield* waitFor("custody operations in flight", inFlight)
      // the last webhooks go out
      yield* waitFor(
        "webhooks to go out",
        "SELECT count(*)::int AS n FROM webhook_events WHERE status = 'pending' AND destination IS NOT NULL"
      )
      violations.push(
        ...(yield* checkInvariants({
          expected: onChain,
          chains: direct,
          payees: LIVE.map(([chain]) => ({
            chain,
            currency: "USDT",
            address: payee[chain] ?? "",
            decimals: DECIMALS[`${chain}-USDT`] ?? 6
          })),
          webhooks: {
            received: receiver.received,
            secrets: new Map([[merchant?.merchantId ?? "", merchant?.secret ?? ""]]),
            destination: receiver.url
          }
        }).pipe(Effect.provide(sql), Effect.orDie))
      )
      // what the merchant's receiver did with it all: each order fulfilled once, the dust seen as overpayments
      const paidOrders = yield* Effect.gen(function* () {
        const pg = yield* PgClient.PgClient
        return yield* pg<{ id: string }>`SELECT id FROM orders WHERE status = 'PAID'`
      }).pipe(Effect.provide(sql), Effect.orDie)
      const dustHeld = dust.filter((d) => !gone.has(d.txHash))
      const overpaidAmounts = new Map(
        yield* Effect.forEach(new Set(dustHeld.map((d) => d.orderId)), (orderId) =>
          Effect.map(
            api(service, "GET", `/v1/orders/${orderId}`, { apiKey }),
            (read): readonly [string, string | undefined] => {
              const given = asRecord(read.body).overpaid_amount
              return [orderId, typeof given === "string" ? given : undefined]
            }
          )
        )
      )
      violations.push(
        ...checkFulfilment({
          record: receiver.record,
          paidOrders: paidOrders.map((o) => o.id),
          dust: dustHeld,
          overpaidAmounts
        })
      )
      const settled = yield* Effect.gen(function* () {
        const pg = yield* PgClient.PgClient
        return yield* pg<{
          status: string
          n: number
        }>`SELECT status, count(*)::int AS n FROM withdrawals GROUP BY status ORDER BY status`
      }).pipe(Effect.provide(sql), Effect.orDie)
      process.kill(service.pid, "SIGINT")
      yield* Effect.sleep("100 millis")
      yield* Scope.close(scope, Exit.void)
      for (const p of yield* waitUntilNoneUnder(dataDir))
        violations.push({
          invariant: "no process left behind",
          detail: `after the last stop: pid ${p.pid} ${p.cmdline}`
        })
      const lost = payments.length - onChain.length
      const result: ScenarioResult = {
        scenario: "crash points (SIGKILL)",
        faults: options.crashes,
        faultDetail:
          `${options.crashes} SIGKILLs of the whole service at random moments; workload: ${counts.orders} orders, ${counts.sweeps} sweeps, ` +
          `${counts.withdrawals} withdrawals (${settled.map((r) => `${r.n} ${r.status}`).join(", ") || "none"}; ${counts.withdrawalsRefused} refused with a 4xx: not enough collected yet; ` +
          `${counts.withdrawalRetries} asked again after a kill swallowed the answer)${lost > 0 ? `; ${lost} payments gone with the devnet's last unsaved moment` : ""}; ` +
          fulfilmentDetail(receiver.record, dustHeld),
        restarts: options.crashes,
        requestsFuzzed: 0,
        payments: onChain.length,
        violations
      }
      return result
    }
    return yield* Effect.dieMessage("unreachable")
  }).pipe(Effect.scoped)
