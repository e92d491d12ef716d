import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Effect, ExecutionStrategy, Exit, Fiber, Layer, Option, Schema, Scope } from "effect"
import { createWalletClient, http, type Address } from "viem"
import type { ChainClient } from "../../src/chains/chain-client.js"
import { makeBep20Client } from "../../src/chains/evm/bep20-client.js"
import { makeSolanaClient } from "../../src/chains/solana/solana-client.js"
import { makeTronClient } from "../../src/chains/tron/tron-client.js"
import { runningEmbeddedUrl } from "../../src/database/embedded-postgres.js"
import { bep20Customer } from "../../src/devnet/devnet-customers.js"
import { payFromCustomer } from "../../src/devnet/devnet-payments.js"
import type { DevnetFile } from "../../src/devnet/devnets.js"
import { devnetChain, tokenAbi } from "../../src/devnet/evm/anvil-devnet.js"
import { evmAddress, isHexAddress } from "../../src/keys/address-encoding.js"
import { masterSeedFromMnemonic } from "../../src/keys/master-seed.js"
import { LocalSignerLive } from "../../src/keys/signer.js"
import { asRecord } from "../json.js"
import { rpcMethod, rpcParams } from "../node-proxy.js"
import { prunedSolanaAnswer, prunedSolanaRewrite } from "../pruned-solana-node.js"
import {
  api,
  devnetsOf,
  interrupt,
  processWorkDir,
  readDevnetFile,
  runToExit,
  type ServiceProcess,
  startService,
  waitUntilNoneUnder
} from "../service-process.js"
import { checkInvariants, type ExpectedDeposit, type Violation } from "./invariants.js"
import { type ProviderCall, type ProviderNode, startProviderNode } from "./provider-node.js"
import type { ScenarioResult } from "./scenario-result.js"
import { seededRandom } from "./seeded-random.js"

const ASSETS = [
  ["TRC20", "TRC20-USDT"],
  ["BEP20", "BEP20-USDT"],
  ["SOLANA", "SOLANA-USDT"]
] as const

/** A BSC full node keeps the state of its newest 128 blocks: older state, and traces, are "missing trie node". */
const STATE_METHODS = new Set([
  "eth_getBalance",
  "eth_call",
  "eth_getCode",
  "eth_getTransactionCount",
  "eth_getStorageAt",
  "debug_traceBlockByNumber",
  "trace_block"
])

const HealthBody = Schema.Struct({
  checks: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  indexers: Schema.optional(
    Schema.Array(
      Schema.Struct({
        chain: Schema.String,
        state: Schema.String,
        cursor: Schema.String,
        detail: Schema.optional(Schema.Unknown)
      })
    )
  )
})

/** The slots (blocks) a node answered `getBlock` / `eth_getBlockByNumber` for with a block: what was really read. */
const blockRead = (call: ProviderCall, answer: unknown): bigint | undefined => {
  const method = rpcMethod(call.body)
  const [at] = rpcParams(call.body)
  const result = typeof answer === "object" && answer !== null && "result" in answer ? answer.result : undefined
  if (result === null || result === undefined) return undefined
  if (method === "getBlock" && typeof at === "number") return BigInt(at)
  if (method === "eth_getBlockByNumber" && typeof at === "string" && at.startsWith("0x")) return BigInt(at)
  return undefined
}

/** A JSON-RPC call straight to a devnet (around every provider): what the chain really holds. */
const ask = (url: string, method: string, params: ReadonlyArray<unknown>) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
    })
    const body: unknown = await response.json()
    return typeof body === "object" && body !== null && "result" in body ? body.result : undefined
  })

export interface RealProvidersOptions {
  readonly seed: number
  /** Restarts of the service (SIGINT, started again at once) while payments arrive. */
  readonly restarts: number
  /** How long payments arrive in each of the service's runs. */
  readonly roundSeconds: number
  /** How long the TRON provider bans the key (TronGrid: 30 s). */
  readonly banSeconds: number
  /**
   * Whether a rescan also goes through the pruned node and then the archive (it reads every slot, slowly:
   * the pruned node's limits are waited out before the archive is asked); always: through the pruned node alone.
   */
  readonly rescanThroughArchive: boolean
}

/**
 * Real providers: the whole service (`npm start`) reaches each chain through a provider that enforces
 * what real ones do, while payments arrive and the service is restarted. TRON: TronGrid's 15 calls a
 * second per key, beyond it a 403 ban ("suspended for Ns"), and another application on the same key
 * that sets the ban off. BSC: 25 calls a second (429 with Retry-After), `eth_getLogs` capped at 5 a second
 * (a JSON-RPC "limit exceeded"), state and traces only for the newest 128 blocks, and blocks whose bloom
 * matches USDT only by chance (its Approval beside another token's Transfer). Solana: the public
 * endpoint's 100 calls per 10 s and 40 per method per 10 s (429), on a node without long-term storage
 * that restarts from a snapshot (its ledger begins there), and an archive node after it.
 *
 * Promises kept: every payment credited exactly once, within a bound said in advance; no indexer ever
 * halts; /health names each limit the service met; a rescan through the pruned node alone never reports
 * success over slots it did not read (through the archive it reads every one).
 */
export const realProvidersScenario = (options: RealProvidersOptions) =>
  Effect.gen(function* () {
    const random = seededRandom(options.seed).fork("real-providers")
    const dataDir = `${yield* processWorkDir("facet-faults-providers-")}/data`
    const devnets = devnetsOf(dataDir)
    const violations: Array<Violation> = []
    const began = Date.now()
    /** Where the scenario is, for whoever watches a long run. */
    const progress = (what: string) =>
      Effect.sync(() => console.log(`[real providers +${((Date.now() - began) / 1000).toFixed(1)} s] ${what}`))
    // the bound each payment is credited within: a ban, a restart, finality and the catch-up after them. A
    // payment whose life met two bans (one at the end of a run, the next at the start of the one after, as
    // seed 4646 has it) has the time banned beyond one ban added: nobody reads through a banned key
    const boundSeconds = options.banSeconds + 45

    // what the Solana chain is at (asked of the devnet itself) and where the pruned node's ledger begins
    const solana = { head: 0, snapshot: 0 }
    const firstSlot = () => Math.max(solana.snapshot, solana.head - 600)
    const bsc = { head: 0n }
    /** Blocks each chain's providers answered with a block, while a rescan runs (cleared before it). */
    const read = { SOLANA: new Set<bigint>(), BEP20: new Set<bigint>() }
    const noteRead = (chain: "SOLANA" | "BEP20") => (call: ProviderCall, answer: unknown) => {
      const n = blockRead(call, answer)
      if (n !== undefined) read[chain].add(n)
      if (
        chain === "BEP20" &&
        rpcMethod(call.body) === "eth_blockNumber" &&
        typeof answer === "object" &&
        answer !== null &&
        "result" in answer &&
        typeof answer.result === "string"
      ) {
        bsc.head = BigInt(answer.result)
      }
    }
    const counts = { quietBlocks: 0, oldState: 0, prunedRefusals: 0, snapshots: 0, tronBans: 0, neighbourBursts: 0 }

    const tron = yield* startProviderNode({
      target: () => devnets()?.tron.url,
      windows: [{ label: "TRON 15 calls a second", ms: 1_000, max: 15, of: "all", refusal: "ban" }],
      banSeconds: options.banSeconds
    })
    const bep20 = yield* startProviderNode({
      target: () => devnets()?.bep20.rpcUrl,
      windows: [
        { label: "BSC 25 calls a second", ms: 1_000, max: 25, of: "all", refusal: "429" },
        { label: "BSC eth_getLogs 5 a second", ms: 1_000, max: 5, of: { method: "eth_getLogs" }, refusal: "rpc-error" }
      ],
      answer: ({ body }) => {
        const method = rpcMethod(body)
        if (method === undefined || !STATE_METHODS.has(method)) return undefined
        // the block is the last parameter (eth_getStorageAt's slot comes before it)
        const at = rpcParams(body)
          .filter((p): p is string => typeof p === "string" && /^0x[0-9a-f]{1,16}$/i.test(p))
          .at(-1)
        if (at === undefined || bsc.head === 0n || BigInt(at) >= bsc.head - 128n) return undefined
        counts.oldState += 1
        return {
          jsonrpc: "2.0",
          id: asRecord(body).id ?? null,
          error: { code: -32000, message: `missing trie node ${"ab".repeat(32)} (path ) state is not available` }
        }
      },
      onAnswer: noteRead("BEP20")
    })
    const prunedAnswer = prunedSolanaAnswer(firstSlot)
    const prunedRewrite = prunedSolanaRewrite(firstSlot)
    const pruned = yield* startProviderNode({
      target: () => devnets()?.solana.rpcUrl,
      windows: [
        { label: "Solana 100 calls per 10 s", ms: 10_000, max: 100, of: "all", refusal: "429" },
        { label: "Solana 40 calls per method per 10 s", ms: 10_000, max: 40, of: "each method", refusal: "429" }
      ],
      answer: ({ body }) => {
        const own = prunedAnswer(body)
        if (own !== undefined && rpcMethod(body) === "getBlock") counts.prunedRefusals += 1
        return own
      },
      rewrite: ({ body }, answer) => prunedRewrite(body, answer),
      onAnswer: noteRead("SOLANA")
    })
    const archive = yield* startProviderNode({
      target: () => devnets()?.solana.rpcUrl,
      windows: [],
      onAnswer: noteRead("SOLANA")
    })
    const providers: ReadonlyArray<{ readonly chain: string; readonly node: ProviderNode }> = [
      { chain: "TRC20", node: tron },
      { chain: "BEP20", node: bep20 },
      { chain: "SOLANA", node: pruned }
    ]
    const env = {
      FACET_DEVNET_VIA_TRC20: tron.url,
      FACET_DEVNET_VIA_BEP20: bep20.url,
      FACET_DEVNET_VIA_SOLANA: `${pruned.url},${archive.url}`,
      // the mainnet budgets (BSC's a little under its provider's 25), the settings docs/indexers.md gives for them
      FACET_NODE_RPS_TRC20: "12",
      FACET_NODE_RPS_BEP20: "20",
      FACET_NODE_RPS_SOLANA: "8",
      FACET_NODE_IN_FLIGHT_TRC20: "8",
      FACET_NODE_IN_FLIGHT_BEP20: "8",
      FACET_NODE_IN_FLIGHT_SOLANA: "8",
      FACET_INDEXER_POLL_MS_TRC20: "500",
      FACET_INDEXER_POLL_MS_SOLANA: "1000",
      // chains at the pace the providers' limits are written for: TRON's 3 s blocks (at 1 s, a 30 s ban in
      // every 40 s of a long run left a 12-a-second budget below the chain's own pace: it fell behind for good),
      // Solana's 400 ms slots
      FACET_DEVNET_TRON_BLOCK_MS: "3000",
      FACET_DEVNET_SOLANA_SLOT_MS: "400"
    }

    // the Solana head, read from the devnet itself, for the pruned node's ledger
    const headReader = yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const url = devnets()?.solana.rpcUrl
          if (url !== undefined) {
            const slot = yield* ask(url, "getSlot", [{ commitment: "processed" }]).pipe(
              Effect.timeout("2 seconds"),
              Effect.option
            )
            if (Option.isSome(slot) && typeof slot.value === "number") solana.head = slot.value
          }
          yield* Effect.sleep("500 millis")
        })
      )
    )

    // /health, read every second while the service runs: what it says of the limits, and whether an indexer halts
    let current: ServiceProcess | undefined
    const namedLimits = new Set<string>()
    const health = { polls: 0, degraded: 0 }
    const healthReader = yield* Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          const service = current
          if (service !== undefined) {
            const answer = yield* api(service, "GET", "/health").pipe(
              Effect.timeout("3 seconds"),
              Effect.sandbox,
              Effect.option
            )
            if (Option.isSome(answer)) {
              health.polls += 1
              if (answer.value.status !== 200) health.degraded += 1
              const body = Schema.decodeUnknownOption(HealthBody)(answer.value.body)
              if (Option.isSome(body)) {
                for (const key of Object.keys(body.value.checks ?? {}))
                  if (key.endsWith("_node_rate_limit")) namedLimits.add(key)
                for (const indexer of body.value.indexers ?? []) {
                  if (indexer.state === "halted")
                    violations.push({
                      invariant: "no indexer halts on what a provider does",
                      detail: `${indexer.chain} halted at ${indexer.cursor}: ${JSON.stringify(indexer.detail)}`
                    })
                }
              }
            }
          }
          yield* Effect.sleep("1 second")
        })
      )
    )

    const payments: Array<ExpectedDeposit & { readonly sentAt: number }> = []
    const addresses: Array<{ chain: string; asset: string; address: string }> = []
    let apiKey = ""
    const outsider = evmAddress(Uint8Array.from({ length: 20 }, () => random.int(256)))

    /** A block with USDT's Approval beside VELNX's Transfer and no USDT transfer: its bloom matches USDT by chance. */
    const quietBlock = (file: DevnetFile) =>
      Effect.gen(function* () {
        const usdt = file.bep20.tokens.USDT
        const velnx = file.bep20.tokens.VELNX
        if (
          usdt === undefined ||
          velnx === undefined ||
          !isHexAddress(usdt) ||
          !isHexAddress(velnx) ||
          !isHexAddress(outsider)
        )
          return
        const tokens: { readonly usdt: Address; readonly velnx: Address; readonly to: Address } = {
          usdt,
          velnx,
          to: outsider
        }
        const wallet = createWalletClient({
          account: bep20Customer,
          chain: devnetChain(file.bep20.rpcUrl),
          transport: http(file.bep20.rpcUrl, { retryCount: 0 })
        })
        yield* Effect.promise(() =>
          wallet
            .writeContract({
              address: tokens.velnx,
              abi: tokenAbi,
              functionName: "transfer",
              args: [tokens.to, 10n ** 18n]
            })
            .then(() =>
              wallet.writeContract({
                address: tokens.usdt,
                abi: tokenAbi,
                functionName: "approve",
                args: [tokens.to, 10n ** 18n]
              })
            )
        )
        counts.quietBlocks += 1
      }).pipe(Effect.catchAllDefect(() => Effect.void))

    /** Payments, quiet blocks and the providers' events, for `seconds` of one run of the service. */
    const workload = (service: ServiceProcess, file: DevnetFile, round: number) =>
      Effect.gen(function* () {
        const started = Date.now()
        const until = started + options.roundSeconds * 1000
        // each run meets each event once, at a seeded moment
        const events = [
          {
            at: started + random.int(options.roundSeconds * 400),
            done: false,
            run: () => {
              // another application on the same TronGrid key goes over the limit: the key is banned for everyone
              tron.neighbour(30, 1_500)
              counts.neighbourBursts += 1
            }
          },
          {
            at: started + random.int(options.roundSeconds * 600),
            done: false,
            run: () => {
              // another application on the same Solana endpoint uses most of its 10 s window
              pruned.neighbour(12, 5_000)
              counts.neighbourBursts += 1
            }
          },
          {
            at: started + random.int(options.roundSeconds * 800),
            done: false,
            run: () => {
              // the Solana node restarts from a snapshot: its ledger begins at today's head
              solana.snapshot = solana.head
              counts.snapshots += 1
            }
          }
        ]
        while (Date.now() < until) {
          for (const event of events) {
            if (!event.done && Date.now() >= event.at) {
              event.done = true
              event.run()
            }
          }
          if (round === 0 && addresses.length < 6) {
            const [chain, asset] = ASSETS[addresses.length % ASSETS.length] ?? ASSETS[0]
            const created = yield* api(service, "POST", "/v1/deposit-addresses", {
              apiKey,
              json: { external_user_id: `provider-user-${addresses.length}`, chain, currency: "USDT" }
            })
            if (created.status >= 500)
              violations.push({
                invariant: "no 5xx",
                detail: `POST /v1/deposit-addresses ${created.status} ${JSON.stringify(created.body)}`
              })
            if (created.status === 201)
              addresses.push({ chain, asset, address: String(asRecord(created.body).address) })
            continue
          }
          if (random.next() < 0.2) {
            yield* quietBlock(file)
          } else {
            const target = random.pick(addresses)
            const amount = `${1 + random.int(200)}.${random.int(100).toString().padStart(2, "0")}`
            const sentAt = Date.now()
            const sent = yield* Effect.either(payFromCustomer(file, target.asset, target.address, amount))
            if (sent._tag === "Right")
              payments.push({ chain: target.chain, txHash: sent.right, to: target.address, amount, sentAt })
          }
          yield* Effect.sleep(`${300 + random.int(700)} millis`)
        }
        for (const event of events) if (!event.done) event.run()
      })

    let result: ScenarioResult | undefined
    for (let round = 0; round <= options.restarts; round++) {
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      // up once it answers: its nodes may be refusing it (a ban outlasts a restart)
      const service = yield* startService(dataDir, `run-${round}`, env, "fast", "answering").pipe(Scope.extend(scope))
      current = service
      yield* progress(`run ${round} of the service answers`)
      const file = yield* readDevnetFile(dataDir)
      if (round === 0) {
        const applied = yield* api(service, "POST", "/v1/ai/merchant-apply", {
          json: {
            project_name: `Real providers ${options.seed}`,
            business_type: "exchange",
            use_case: "payments",
            agree_terms: true,
            contact_email: "ops@providers.example",
            webhook_url: "https://merchant.example/hooks"
          }
        })
        if (applied.status !== 201)
          return yield* Effect.dieMessage(`onboarding refused (${applied.status}): ${JSON.stringify(applied.body)}`)
        apiKey = String(asRecord(asRecord(applied.body).env).FACET_API_KEY)
      }
      yield* workload(service, file, round)
      yield* progress(`run ${round}: ${payments.length} payments so far`)
      if (round < options.restarts) {
        current = undefined
        if (!(yield* interrupt(service)))
          violations.push({
            invariant: "the service stops when asked",
            detail: `run ${round} did not exit within 30 s of SIGINT`
          })
        for (const p of yield* waitUntilNoneUnder(dataDir))
          violations.push({
            invariant: "no process left behind",
            detail: `after restart ${round + 1}: pid ${p.pid} ${p.cmdline}`
          })
        yield* Scope.close(scope, Exit.void)
        continue
      }

      // the last run: every payment credited, within the bound. The chains read around the providers: a
      // payment still in a devnet's mempool when the service stopped it is gone, and only what the chain
      // holds counts
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
      // (the last payments are given a few seconds to be mined)
      yield* Effect.sleep("3 seconds")
      const onChain = yield* Effect.filter(
        payments,
        (p) =>
          Effect.map(
            Effect.option(direct.find((c) => c.chain === p.chain)?.transaction(p.txHash) ?? Effect.succeedNone),
            (found) => Option.exists(Option.flatten(found), (t) => t.status === "success")
          ),
        { concurrency: 8 }
      )
      yield* progress(
        `${onChain.length} of ${payments.length} payments found on chain; waiting for each to be credited`
      )
      const confirmedAt = (p: ExpectedDeposit) =>
        Effect.map(
          api(service, "GET", `/v1/transactions?q=${p.txHash}&status=confirmed&type=deposit`, { apiKey }),
          (r) => Number(asRecord(r.body).total) >= 1
        )
      const waitStarted = Date.now()
      while (
        Date.now() - waitStarted < (boundSeconds + options.banSeconds + 30) * 1000 &&
        !(yield* Effect.forEach(onChain, confirmedAt, { concurrency: 4 })).every(Boolean)
      )
        yield* Effect.sleep("1 second")
      yield* progress(`${onChain.length} payments on chain waited for`)
      const url = runningEmbeddedUrl(dataDir)
      if (Option.isNone(url)) return yield* Effect.dieMessage("the service's PostgreSQL is not running")
      const sql = Layer.provide(PgClient.layer({ url: url.value, maxConnections: 2 }), Reactivity.layer)
      const delays = yield* Effect.gen(function* () {
        const pg = yield* PgClient.PgClient
        const rows = yield* pg<{ tx_hash: string; confirmed_ms: string }>`
          SELECT tx_hash, (extract(epoch FROM confirmed_at) * 1000)::bigint::text AS confirmed_ms FROM transactions
          WHERE type = 'deposit' AND status = 'confirmed' AND tx_hash IN ${pg.in(onChain.map((p) => p.txHash))}`
        const at = new Map(rows.map((r) => [r.tx_hash, Number(r.confirmed_ms)]))
        return onChain.flatMap((p) => {
          const confirmed = at.get(p.txHash)
          if (confirmed === undefined) return []
          const node = providers.find((provider) => provider.chain === p.chain)?.node
          const bannedSeconds = (node?.bannedBetween(p.sentAt, confirmed) ?? 0) / 1000
          return [
            {
              payment: p,
              seconds: (confirmed - p.sentAt) / 1000,
              bannedSeconds,
              allowed: boundSeconds + Math.max(0, bannedSeconds - options.banSeconds)
            }
          ]
        })
      }).pipe(Effect.provide(sql), Effect.orDie)
      for (const late of delays.filter((d) => d.seconds > d.allowed)) {
        violations.push({
          invariant: `credited within ${boundSeconds} s (and the time banned beyond one ban)`,
          detail: `${late.payment.chain} ${late.payment.txHash}: ${late.seconds.toFixed(1)} s after it was sent, ${late.bannedSeconds.toFixed(1)} s of it banned`
        })
      }
      // banned longer than one ban's length: two bans, or one a client's calls extended
      const longBanned = delays.filter((d) => d.allowed > boundSeconds).length
      const slowest = delays.reduce((m, d) => Math.max(m, d.seconds), 0)

      // /health named every limit the service met
      for (const { chain, node } of providers) {
        const refused = [...node.stats().refused.entries()]
          .filter(([label]) => !label.endsWith("(the neighbour)"))
          .reduce((s, [, n]) => s + n, 0)
        const check = `${chain.toLowerCase()}_node_rate_limit`
        if (refused > 0 && !namedLimits.has(check))
          violations.push({
            invariant: "/health names the limit being hit",
            detail: `${chain}'s provider refused ${refused} calls; /health never showed ${check} in ${health.polls} polls`
          })
      }

      // rescans of Solana slots from before the snapshot: through the pruned node alone (it cannot: it must
      // fail, naming where), and with the archive after it (every slot read)
      const rescanned: Array<string> = []
      const finalized = yield* ask(file.solana.rpcUrl, "getSlot", [{ commitment: "finalized" }])
      const top = Math.min(solana.snapshot + 5, typeof finalized === "number" ? finalized - 10 : solana.snapshot)
      const from = Math.max(1, top - 20)
      const produced = yield* ask(file.solana.rpcUrl, "getBlocks", [from, top, { commitment: "finalized" }])
      const slots = Array.isArray(produced) ? produced.filter((s): s is number => typeof s === "number") : []
      const throughs = [
        ["the pruned node alone", pruned.url],
        ...(options.rescanThroughArchive
          ? [["the pruned node, then the archive", `${pruned.url},${archive.url}`] as const]
          : [])
      ] as const
      for (const [label, via] of throughs) {
        read.SOLANA.clear()
        yield* progress(`a rescan of SOLANA ${from}–${top} through ${label}`)
        const run = yield* runToExit(
          "indexer/indexer-cli.ts",
          ["--chain", "SOLANA", "--rescan-from", String(from), "--to", String(top)],
          dataDir,
          { ...env, FACET_DEVNET_VIA_SOLANA: via }
        )
        const unread = slots.filter((s) => !read.SOLANA.has(BigInt(s)))
        const said =
          run.output
            .split("\n")
            .filter((l) => l.includes("rescan") || l.startsWith("{"))
            .slice(-1)[0] ?? run.output.slice(-300)
        rescanned.push(`${label}: ${run.code === 0 ? "done" : "failed"} (${said.trim().slice(0, 200)})`)
        if (run.code === 0 && unread.length > 0)
          violations.push({
            invariant: "no rescan reports success over blocks it did not read",
            detail: `SOLANA ${from}–${top} through ${label}: done, ${unread.length} of ${slots.length} slots never read (${unread.slice(0, 5).join(", ")}…)`
          })
        if (run.code !== 0 && !/rescan of \d+–\d+ stopped at block \d+/.test(run.output))
          violations.push({
            invariant: "a rescan that cannot read says where it stopped",
            detail: `through ${label}: exit ${run.code}: ${run.output.slice(-400)}`
          })
        if (via.includes(",") && run.code !== 0)
          violations.push({
            invariant: "a rescan with an archive node reads every slot",
            detail: `SOLANA ${from}–${top}: exit ${run.code}: ${run.output.slice(-400)}`
          })
      }

      yield* progress("the invariants")
      violations.push(
        ...(yield* checkInvariants({ expected: onChain, chains: direct }).pipe(Effect.provide(sql), Effect.orDie))
      )

      current = undefined
      yield* Fiber.interrupt(healthReader)
      yield* Fiber.interrupt(headReader)
      yield* progress("the service stops")
      if (!(yield* interrupt(service)))
        violations.push({
          invariant: "the service stops when asked",
          detail: "the last run did not exit within 30 s of SIGINT"
        })
      yield* Scope.close(scope, Exit.void)
      for (const p of yield* waitUntilNoneUnder(dataDir))
        violations.push({
          invariant: "no process left behind",
          detail: `after the last stop: pid ${p.pid} ${p.cmdline}`
        })

      const refusals = providers.flatMap(({ node }) => [...node.stats().refused.entries()])
      const total = refusals.reduce((s, [, n]) => s + n, 0)
      result = {
        scenario: `real providers (credited within ${slowest.toFixed(0)} s, bound ${boundSeconds} s${longBanned > 0 ? ` plus the time banned beyond one ban's length for ${longBanned} payments` : ""})`,
        faults: total + counts.quietBlocks + counts.oldState + counts.prunedRefusals + counts.snapshots,
        faultDetail:
          `refused: ${refusals.map(([label, n]) => `${label} ${n}`).join(", ") || "none"}; ${tron.stats().bans} TronGrid bans of ${options.banSeconds} s; ` +
          `${counts.neighbourBursts} bursts of another application on the same key; ${counts.snapshots} Solana snapshot restarts, ${counts.prunedRefusals} getBlock refused as not held, ${archive.stats().answered} calls answered by the archive; ` +
          `${counts.quietBlocks} BSC blocks matching USDT's bloom by chance; ${counts.oldState} calls for state older than 128 blocks; /health named ${[...namedLimits].sort().join(", ") || "nothing"} (${health.degraded} of ${health.polls} polls degraded); rescans: ${rescanned.join("; ")}` +
          `${payments.length > onChain.length ? `; ${payments.length - onChain.length} payments gone from a devnet's mempool when the service stopped it` : ""}`,
        restarts: options.restarts,
        requestsFuzzed: 0,
        payments: onChain.length,
        violations
      }
    }
    return result ?? (yield* Effect.dieMessage("the scenario ran no round"))
  }).pipe(Effect.scoped)
