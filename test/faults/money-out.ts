import { SqlClient } from "@effect/sql"
import { Keypair } from "@solana/web3.js"
import { Context, Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts"
import { randomBytes } from "node:crypto"
import { WithdrawalDecisions } from "../../custody/withdrawal-decisions.js"
import { WithdrawalPolicy } from "../../custody/withdrawal-policy.js"
import { Reconciliation } from "../../indexer/reconciliation.js"
import { ChainEndpoints } from "../../src/chains/chain-endpoints.js"
import type { Chain } from "../../src/domain/chain.js"
import { Devnets, DevnetsLive } from "../../src/devnet/devnets.js"
import { tronAddress } from "../../src/keys/address-encoding.js"
import { MoneyDecimal } from "../../src/money.js"
import { asUser, member } from "../console-members.js"
import { clientOf, fundedAddress, sweep, untilFinished } from "../custody-flows.js"
import { TestClient } from "../http-harness.js"
import { asRecord } from "../json.js"
import { onboardMerchant } from "../merchants.js"
import { ClockControl } from "../policy-clock.js"
import { type HostileBalancer, startHostileBalancer, VIEWS } from "./hostile-balancer.js"
import { moneyOutViolations, type Placed } from "./money-out-invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

/** The balancers of this run, one per chain (the network layer makes them; the scenario steers them). */
const balancers: Array<{ readonly chain: Chain; readonly balancer: HostileBalancer }> = []
const run = { seed: 1 }

/** The devnets, each chain's node given to the service as one load-balanced URL of hostile views. */
export const HostileNetworkLive = (seed: number) => {
  run.seed = seed
  return Layer.scopedContext(
    Effect.gen(function* () {
      const endpoints = yield* ChainEndpoints
      const devnets = yield* Devnets
      const random = seededRandom(seed)
      const tron = yield* startHostileBalancer(endpoints.tron.url, "TRC20", random.fork("TRC20"))
      const bsc = yield* startHostileBalancer(endpoints.bep20.rpcUrl, "BEP20", random.fork("BEP20"))
      const sol = yield* startHostileBalancer(endpoints.solana.rpcUrl, "SOLANA", random.fork("SOLANA"))
      balancers.splice(
        0,
        balancers.length,
        { chain: "TRC20", balancer: tron },
        { chain: "BEP20", balancer: bsc },
        { chain: "SOLANA", balancer: sol }
      )
      return Context.make(ChainEndpoints, {
        bep20: { ...endpoints.bep20, rpcUrl: bsc.url },
        tron: { ...endpoints.tron, url: tron.url },
        solana: { ...endpoints.solana, rpcUrl: sol.url }
      }).pipe(Context.add(Devnets, devnets))
    })
  ).pipe(Layer.provide(DevnetsLive))
}

export const ASSETS = [
  { chain: "TRC20", currency: "USDT", fund: "600", amount: "5", large: "40" },
  { chain: "BEP20", currency: "USDT", fund: "600", amount: "5", large: "40" },
  { chain: "BEP20", currency: "BNB", fund: "2", amount: "0.05", large: "0.4" },
  { chain: "SOLANA", currency: "USDT", fund: "600", amount: "5", large: "40" }
] as const

/** A fresh address nobody controls here, per chain: what it holds at the end is what was sent to it. */
export const recipient = (chain: Chain) =>
  chain === "BEP20"
    ? privateKeyToAddress(generatePrivateKey())
    : chain === "TRC20"
      ? tronAddress(randomBytes(20))
      : Keypair.generate().publicKey.toBase58()

/**
 * Money out behind hostile providers: withdrawals on the three devnets, each chain's node one
 * load-balanced URL whose calls land on an honest, a lagging, a pruned or a re-send-refusing node; the
 * BEP20 gas price triples between quotes and approvals (native withdrawals then exceed their quotes);
 * the per-withdrawal limit tightens while some are pending; three approvers approve each one at once
 * under a quorum of two. Then the nodes heal and every invariant of the money-out path is checked.
 */
export const moneyOutScenario = (options: { readonly withdrawals: number }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const client = yield* TestClient
    const decisions = yield* WithdrawalDecisions
    const policy = yield* WithdrawalPolicy
    const clock = yield* ClockControl
    const random = seededRandom(run.seed).fork("money-out")
    const operator = { kind: "operator", name: "campaign", from: "test" } as const

    // one merchant with every asset collected (the nodes honest while it is set up)
    yield* sql`UPDATE wallet_asset_policies SET status = 'live', can_withdraw = true, can_collect = true, signing_implemented = true WHERE chain = 'SOLANA' AND currency = 'USDT'`
    const { apiKey, merchantId } = yield* onboardMerchant({ integration_mode: "exchange_wallet" })
    for (const asset of ASSETS) {
      const native = asset.currency === "BNB"
      if (native)
        yield* sql`UPDATE wallet_asset_policies SET can_collect = true WHERE chain = 'BEP20' AND currency = 'BNB'`
      const receive = yield* fundedAddress(apiKey, asset.chain, asset.currency, asset.fund)
      const started = yield* sweep(apiKey, `${asset.chain}-${asset.currency}`, { from_wallet_id: receive.walletId })
      yield* untilFinished(apiKey, `${asset.chain}-${asset.currency}`, String(asRecord(started.body).operation_id))
      if (native)
        yield* sql`UPDATE wallet_asset_policies SET can_collect = false WHERE chain = 'BEP20' AND currency = 'BNB'`
    }
    const approvers = [
      { id: yield* member(merchantId, "mo-alice", "approver"), login: "mo-alice" },
      { id: yield* member(merchantId, "mo-bob", "approver"), login: "mo-bob" },
      { id: yield* member(merchantId, "mo-carol", "approver"), login: "mo-carol" }
    ]
    yield* clock.advance("25 hours")
    yield* policy.change(merchantId, [{ setting: "quorum", value: "2" }], operator)

    // the nodes turn hostile; withdrawals are quoted and placed
    for (const { balancer } of balancers) balancer.setHostile(true)
    const placed: Array<Placed> = []
    for (let i = 0; i < options.withdrawals; i++) {
      const asset = random.pick(ASSETS)
      const forbidden = random.next() < 0.25
      const to = recipient(asset.chain)
      const created = yield* client.request("POST", "/v1/withdrawals", {
        apiKey,
        json: {
          chain: asset.chain,
          currency: asset.currency,
          amount: forbidden ? asset.large : asset.amount,
          to_address: to
        }
      })
      if (created.status !== 201) continue
      placed.push({
        id: String(asRecord(created.body).withdrawal_id),
        chain: asset.chain,
        currency: asset.currency,
        to,
        forbidden
      })
    }
    // between quote and approval: BEP20's gas price triples, the limit per withdrawal tightens under the large ones
    for (const { chain, balancer } of balancers) if (chain === "BEP20") balancer.setGasPriceFactor(3n)
    yield* policy.change(
      merchantId,
      ASSETS.map((a) => ({
        setting: `per_tx:${a.chain}-${a.currency}`,
        value: new MoneyDecimal(a.large).div(2).toFixed()
      })),
      operator
    )
    // three approvers at once on each, an operator now and then too
    yield* Effect.forEach(
      placed,
      (w) =>
        Effect.all(
          [
            ...approvers.map((a) => Effect.either(decisions.decide(w.id, "APPROVED", asUser(a.id, a.login)))),
            ...(random.next() < 0.3
              ? [
                  Effect.either(
                    decisions.decide(w.id, "APPROVED", { kind: "operator", by: "campaign-ops", from: "cli@test" })
                  )
                ]
              : [])
          ],
          { concurrency: "unbounded" }
        ),
      { concurrency: 4 }
    )

    // the nodes heal; every approved withdrawal ends, the refused ones are cancelled
    yield* Effect.sleep("3 seconds")
    for (const { balancer } of balancers) {
      balancer.setHostile(false)
      balancer.setGasPriceFactor(1n)
    }
    const deadline = Date.now() + 180_000
    for (;;) {
      const [open] = yield* sql<{
        n: number
      }>`SELECT count(*)::int AS n FROM withdrawals WHERE merchant_id = ${merchantId} AND status IN ('APPROVED', 'BROADCAST')`
      if ((open?.n ?? 0) === 0 || Date.now() > deadline) break
      yield* Effect.sleep("500 millis")
    }
    for (const w of placed)
      yield* Effect.either(
        decisions.decide(w.id, "CANCELLED", {
          kind: "operator",
          by: "campaign-ops",
          from: "cli@test",
          reason: "campaign end"
        })
      )

    // the invariants
    const reconciliation = yield* Reconciliation
    const checked = yield* moneyOutViolations({
      merchantId,
      placed,
      held: (chain, address, currency) =>
        Effect.flatMap(clientOf(chain), (c) => Effect.either(c.balance(address, currency))),
      differences: Effect.map(
        Effect.forEach(["TRC20", "BEP20", "SOLANA"] as const, reconciliation.reconcileChain),
        (reports) => reports.flatMap((report) => report.differences.map((d) => ({ chain: report.chain, ...d })))
      )
    })
    const served = new Map<string, number>()
    for (const { balancer } of balancers)
      for (const [view, n] of balancer.served()) served.set(view, (served.get(view) ?? 0) + n)
    const hostileCalls = VIEWS.filter((v) => v !== "honest").reduce((s, v) => s + (served.get(v) ?? 0), 0)
    return {
      scenario: `money out behind load-balanced bad nodes (${checked.outcomes})`,
      faults: hostileCalls,
      faultDetail: VIEWS.filter((v) => v !== "honest")
        .map((v) => `${v} ${served.get(v) ?? 0}`)
        .join(", "),
      restarts: 0,
      requestsFuzzed: 0,
      payments: placed.length,
      violations: checked.violations
    } satisfies ScenarioResult
  }).pipe(
    Effect.ensuring(
      Effect.sync(() => {
        for (const { balancer } of balancers) {
          balancer.setHostile(false)
          balancer.setGasPriceFactor(1n)
        }
      })
    )
  )
