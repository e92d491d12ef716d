import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { ChainEndpoints } from "../../src/chains/chain-endpoints.js"
import { makeBep20Client } from "../../src/chains/evm/bep20-client.js"
import { makeSolanaClient } from "../../src/chains/solana/solana-client.js"
import { makeTronClient } from "../../src/chains/tron/tron-client.js"
import { AppConfig } from "../../src/config.js"
import { payFromCustomer } from "../../src/devnet/devnet-payments.js"
import { DevnetFile, devnetFilePath, Devnets, DevnetsLive } from "../../src/devnet/devnets.js"
import { TestClient } from "../http-harness.js"
import { asRecord } from "../json.js"
import { startReceiver } from "../webhook-receiver.js"
import { type Dialect, type FaultKind, type FaultProxy, type ForkPlan, startFaultProxy } from "./fault-proxy.js"
import { checkInvariants, type ExpectedDeposit } from "./invariants.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

/** The nodes the service was given for this run: two bad ones per chain, and the fork's victim. */
const campaign: {
  seed: number
  proxies: Array<{ readonly chain: Dialect; readonly proxy: FaultProxy }>
  fork: { victim: `0x${string}`; token: `0x${string}` }
} = {
  seed: 1,
  proxies: [],
  fork: { victim: `0x${"00".repeat(20)}`, token: `0x${"00".repeat(20)}` }
}

/**
 * The devnets, each behind two fault proxies given to the service as its two nodes
 * (FACET_*_RPC_URLS): the first fails often, the second less; on BEP20 the chain itself forks now and then (both nodes serve the branch).
 */
export const BadNodesLive = (seed: number) => {
  campaign.seed = seed
  return Layer.scopedContext(
    Effect.gen(function* () {
      const endpoints = yield* ChainEndpoints
      const devnets = yield* Devnets
      const random = seededRandom(seed)
      campaign.fork = { victim: campaign.fork.victim, token: endpoints.bep20.tokens.get("USDT") ?? campaign.fork.token }
      const fork: ForkPlan = {
        get victim() {
          return campaign.fork.victim
        },
        token: campaign.fork.token,
        state: { from: 0n, until: 0 }
      }
      const pair = (chain: Dialect, url: string) =>
        Effect.gen(function* () {
          const first = yield* startFaultProxy(
            url,
            chain,
            random.fork(`${chain}-a`),
            chain === "BEP20" ? fork : undefined
          )
          const second = yield* startFaultProxy(
            url,
            chain,
            random.fork(`${chain}-b`),
            chain === "BEP20" ? fork : undefined
          )
          campaign.proxies.push({ chain, proxy: first }, { chain, proxy: second })
          return [first.url, second.url] as const
        })
      const [tronA, tronB] = yield* pair("TRC20", endpoints.tron.url)
      const [bscA, bscB] = yield* pair("BEP20", endpoints.bep20.rpcUrl)
      const [solA, solB] = yield* pair("SOLANA", endpoints.solana.rpcUrl)
      return Context.make(ChainEndpoints, {
        bep20: { ...endpoints.bep20, rpcUrl: bscA, fallbackUrls: [bscB] },
        tron: { ...endpoints.tron, url: tronA, fallbackUrls: [tronB] },
        solana: { ...endpoints.solana, rpcUrl: solA, fallbackUrls: [solB] }
      }).pipe(Context.add(Devnets, devnets))
    })
  ).pipe(Layer.provide(DevnetsLive))
}

const HealthNodes = Schema.Struct({
  nodes: Schema.optional(
    Schema.Array(
      Schema.Struct({ chain: Schema.String, endpoints: Schema.Array(Schema.Struct({ state: Schema.String })) })
    )
  )
})

const ASSETS = [
  ["TRC20", "TRC20-USDT"],
  ["BEP20", "BEP20-USDT"],
  ["SOLANA", "SOLANA-USDT"]
] as const

/**
 * Bad nodes: payments on all three chains while every node the service reads misbehaves (latency,
 * hangs, dropped connections, 429, 5xx, truncated and malformed JSON, heads going backwards, blocks not
 * found, log ranges refused, a BEP20 node serving another branch with an invented deposit). Then the
 * nodes heal; the indexers must converge with every payment credited once and nothing from the fork.
 */
export const badNodesScenario = (options: { readonly seconds: number; readonly rate: number }) =>
  Effect.gen(function* () {
    const client = yield* TestClient
    const config = yield* AppConfig
    const endpoints = yield* ChainEndpoints
    const random = seededRandom(campaign.seed).fork("workload")
    const receiver = yield* startReceiver()
    const onboarded = asRecord(
      asRecord(
        (yield* client.request("POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Bad nodes ${campaign.seed}`,
            business_type: "shop",
            use_case: "payments",
            agree_terms: true,
            contact_email: "ops@faults.example",
            webhook_url: receiver.url
          }
        })).body
      ).env
    )
    const apiKey = String(onboarded.FACET_API_KEY)
    const secrets = new Map([[String(onboarded.FACET_MERCHANT_ID), String(onboarded.FACET_WEBHOOK_SECRET)]])
    const address = (chain: string, user: string) =>
      Effect.map(
        client.request("POST", "/v1/deposit-addresses", {
          apiKey,
          json: { external_user_id: user, chain, currency: "USDT" }
        }),
        (r) => String(asRecord(r.body).address)
      )
    const users = yield* Effect.forEach(ASSETS, ([chain, asset]) =>
      Effect.map(
        Effect.forEach([1, 2, 3], (i) => address(chain, `${chain}-user-${i}`)),
        (addresses) => ({ chain, asset, addresses })
      )
    )
    const victim = yield* address("BEP20", "fork-victim")
    if (victim.startsWith("0x")) campaign.fork = { ...campaign.fork, victim: `0x${victim.slice(2)}` }
    const file = yield* Schema.decodeUnknown(Schema.parseJson(DevnetFile))(
      fs.readFileSync(devnetFilePath(config.dataDir), "utf8")
    )

    const expected: Array<ExpectedDeposit> = []
    let unhealthySeen = 0
    let healthChecks = 0
    for (const { proxy } of campaign.proxies) proxy.setRate(options.rate)
    const deadline = Date.now() + options.seconds * 1000
    while (Date.now() < deadline) {
      const target = random.pick(users)
      const to = random.pick(target.addresses)
      const amount = `${1 + random.int(50)}.${random.int(100).toString().padStart(2, "0")}`
      const txHash = yield* payFromCustomer(file, target.asset, to, amount)
      expected.push({ chain: target.chain, txHash, to, amount })
      const health = yield* client.request("GET", "/health")
      healthChecks += 1
      const nodes = Schema.decodeUnknownOption(HealthNodes)(health.body)
      if (
        nodes._tag === "Some" &&
        (nodes.value.nodes ?? []).some((c) => c.endpoints.some((e) => e.state !== "ok" && e.state !== "unused"))
      )
        unhealthySeen += 1
      yield* Effect.sleep(`${300 + random.int(700)} millis`)
    }
    for (const { proxy } of campaign.proxies) proxy.setRate(0)

    // healed: every payment must end up credited once
    const allConfirmed = Effect.gen(function* () {
      const rows = yield* Effect.forEach(expected, (p) =>
        client.request("GET", `/v1/transactions?q=${p.txHash}&status=confirmed&type=deposit`, { apiKey })
      )
      return rows.every((r) => Number(asRecord(r.body).total) >= 1)
    })
    const started = Date.now()
    while (!(yield* allConfirmed) && Date.now() - started < 120_000) yield* Effect.sleep("1 second")
    // the webhooks of the last confirmations
    yield* Effect.sleep("2 seconds")

    // the chains read around the proxies: what is really there
    const direct: ReadonlyArray<ChainClient> = [
      yield* makeTronClient({
        url: file.tron.url,
        tokens: endpoints.tron.tokens,
        confirmations: endpoints.tron.confirmations
      }),
      yield* makeBep20Client({
        rpcUrl: file.bep20.rpcUrl,
        chainId: endpoints.bep20.chainId,
        tokens: endpoints.bep20.tokens,
        confirmations: endpoints.bep20.confirmations,
        traces: "off"
      }),
      yield* makeSolanaClient({ rpcUrl: file.solana.rpcUrl, tokens: endpoints.solana.tokens })
    ]
    const violations = yield* checkInvariants({
      expected,
      chains: direct,
      webhooks: { received: receiver.received, secrets, destination: receiver.url }
    })
    if (unhealthySeen === 0)
      violations.push({
        invariant: "/health says what is wrong",
        detail: `no failing node shown in ${healthChecks} checks during the faults`
      })
    // the fork's invented deposits the indexer saw: each must have been reversed, never confirmed
    const sql = yield* SqlClient.SqlClient
    const [forked] = yield* sql<{ seen: number; confirmed: number }>`
      SELECT count(*)::int AS seen, count(*) FILTER (WHERE status = 'confirmed')::int AS confirmed
      FROM transactions WHERE chain = 'BEP20' AND tx_hash LIKE ${`0x${"f0".repeat(16)}%`}`
    const injected = new Map<FaultKind, number>()
    for (const { proxy } of campaign.proxies)
      for (const [kind, n] of proxy.injected()) injected.set(kind, (injected.get(kind) ?? 0) + n)
    const result: ScenarioResult = {
      scenario: "bad nodes",
      faults: [...injected.values()].reduce((a, b) => a + b, 0),
      faultDetail: `${[...injected].map(([kind, n]) => `${kind} ${n}`).join(", ")}; fork deposits seen ${forked?.seen ?? 0}, confirmed ${forked?.confirmed ?? 0}`,
      restarts: 0,
      requestsFuzzed: 0,
      payments: expected.length,
      violations
    }
    return result
  }).pipe(Effect.scoped)
