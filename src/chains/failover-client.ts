import { Duration, Effect, Option, Ref } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { type ChainClient, ChainRpcError, type EnergyResources } from "./chain-client.js"

/** One node of a chain, as configured (FACET_BEP20_RPC_URLS, …), with its client. */
export interface ChainEndpoint {
  /** What logs and /health show: scheme and host only, as provider URLs carry API keys in paths and queries. */
  readonly label: string
  readonly client: ChainClient
}

/** How one endpoint is doing, for /health. */
export interface EndpointHealth {
  readonly endpoint: string
  readonly state: "ok" | "failing" | "cooling_down" | "wrong_chain" | "unused"
  readonly consecutiveFailures: number
  readonly lastError: string
}

interface EndpointState {
  readonly failures: number
  readonly coolUntil: number
  readonly lastError: string
  /** Its genesis was checked against the chain's (before its first use); wrong: never used again. */
  readonly identity: "unchecked" | "same" | "wrong"
  readonly used: boolean
}

/** A configured URL without what may be a secret (path, query, credentials). */
export const endpointLabel = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}`
  } catch {
    return "(unparseable URL)"
  }
}

/** Splits a comma-separated list of URLs (FACET_*_RPC_URLS), dropping blanks. */
export const splitUrls = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

/**
 * Several nodes of one chain behind one client. Each call goes to the preferred endpoint; a node that
 * fails it (ChainRpcError: unreachable, 5xx, 429, garbage, a missing block) is passed over for a cooling
 * period that doubles with each failure in a row (capped), and the call goes to the next. A node's answer
 * is never mixed into another's within one call. Before a node is first used its genesis is compared with
 * the chain's: a misconfigured node of another network is never read. A refusal (TransferRejected) is an
 * answer, not a failure: it is returned as is. Every call has a deadline (FACET_NODE_TIMEOUT_MS), one
 * node or several.
 */
export const makeFailoverClient = (
  endpoints: NonEmptyReadonlyArray<ChainEndpoint>,
  options: { readonly baseCooldownMs?: number; readonly maxCooldownMs?: number; readonly callTimeoutMs?: number } = {}
) =>
  Effect.gen(function* () {
    const [first] = endpoints
    const chain = first.client.chain
    // a node that accepts the connection and never answers must not stall an indexer (not every client has a timeout)
    const callTimeout = Duration.millis(options.callTimeoutMs ?? 30_000)
    const baseCooldown = options.baseCooldownMs ?? 1_000
    const maxCooldown = options.maxCooldownMs ?? 30_000
    const states = yield* Ref.make<ReadonlyArray<EndpointState>>(
      endpoints.map(() => ({ failures: 0, coolUntil: 0, lastError: "", identity: "unchecked", used: false }))
    )
    const genesis = yield* Ref.make<Option.Option<string>>(Option.none())
    const update = (i: number, f: (s: EndpointState) => EndpointState) =>
      Ref.update(states, (all) => all.map((s, j) => (j === i ? f(s) : s)))

    const failed = (i: number, error: ChainRpcError) =>
      Effect.gen(function* () {
        const now = Date.now()
        yield* update(i, (s) => ({
          ...s,
          failures: s.failures + 1,
          lastError: error.message.slice(0, 300),
          coolUntil: now + Math.min(maxCooldown, baseCooldown * 2 ** Math.min(s.failures, 16))
        }))
        if ((yield* Ref.get(states))[i]?.failures === 1) {
          yield* Effect.logWarning(
            `${chain} node ${endpoints[i]?.label ?? i} failed; trying the next one: ${error.message.slice(0, 200)}`
          )
        }
      })
    const succeeded = (i: number) =>
      Effect.gen(function* () {
        const before = (yield* Ref.get(states))[i]
        if (before !== undefined && before.failures > 0) {
          yield* Effect.logInfo(
            `${chain} node ${endpoints[i]?.label ?? i} answers again after ${before.failures} failures`
          )
        }
        yield* update(i, (s) => ({ ...s, failures: 0, coolUntil: 0, used: true }))
      })

    const markWrong = (i: number, theirs: string, known: string) =>
      Effect.gen(function* () {
        if ((yield* Ref.get(states))[i]?.identity === "wrong") return
        yield* update(i, (s) => ({
          ...s,
          identity: "wrong",
          lastError: `serves another chain (genesis ${theirs}, the others ${known})`
        }))
        yield* Effect.logError(
          `${chain} node ${endpoints[i]?.label ?? i} serves another chain (genesis ${theirs}); it is never used — fix the configuration`
        )
      })

    /**
     * The chain's genesis, as most of the nodes answering say (a tie: the one configured first); asked of
     * every node the first time, so one misconfigured node cannot define the chain for the others.
     */
    const learnGenesis = Effect.gen(function* () {
      const answers = yield* Effect.forEach(endpoints, (e) => Effect.option(e.client.genesis), {
        concurrency: "unbounded"
      })
      const votes = new Map<string, number>()
      for (const answer of answers)
        if (Option.isSome(answer)) votes.set(answer.value, (votes.get(answer.value) ?? 0) + 1)
      let best: Option.Option<string> = Option.none()
      for (const answer of answers) {
        if (
          Option.isSome(answer) &&
          (Option.isNone(best) || (votes.get(answer.value) ?? 0) > (votes.get(best.value) ?? 0))
        )
          best = answer
      }
      if (Option.isSome(best)) {
        yield* Ref.set(genesis, best)
        // every node that answered is judged now, so /health names a wrong one before it would be used
        yield* Effect.forEach(answers, (answer, i) =>
          Option.isSome(answer) && answer.value !== best.value ? markWrong(i, answer.value, best.value) : Effect.void
        )
      }
      return best
    })
    const lock = yield* Effect.makeSemaphore(1)

    /** Before a node is first used: does it serve the chain the others serve? */
    const checkIdentity = (i: number, endpoint: ChainEndpoint) =>
      Effect.gen(function* () {
        const state = (yield* Ref.get(states))[i]
        if (state === undefined || state.identity !== "unchecked") return
        const known = yield* lock.withPermits(1)(
          Effect.flatMap(Ref.get(genesis), (g) => (Option.isSome(g) ? Effect.succeed(g) : learnGenesis))
        )
        if (Option.isNone(known))
          return yield* new ChainRpcError({ chain, message: "no node answers with the chain's first block" })
        const theirs = yield* endpoint.client.genesis
        if (known.value !== theirs) {
          yield* markWrong(i, theirs, known.value)
          return yield* new ChainRpcError({ chain, message: `${endpoint.label} serves another chain` })
        }
        yield* update(i, (s) => ({ ...s, identity: "same" }))
      })

    /**
     * Tries each usable endpoint once, those not cooling down first, in configured order. `sends`: the call
     * hands signed bytes over, so a node's refusal after an earlier node failed (it may have accepted them
     * before its answer was lost) is not a refusal of the bytes: it is returned as a failure to answer.
     */
    const call = <A, E>(
      operation: (client: ChainClient) => Effect.Effect<A, E | ChainRpcError>,
      sends = false
    ): Effect.Effect<A, E | ChainRpcError> =>
      Effect.gen(function* () {
        const now = Date.now()
        const all = yield* Ref.get(states)
        const usable = endpoints.flatMap((endpoint, i) =>
          all[i]?.identity === "wrong" ? [] : [{ endpoint, i, cooling: (all[i]?.coolUntil ?? 0) > now }]
        )
        const order = [...usable.filter((u) => !u.cooling), ...usable.filter((u) => u.cooling)]
        const errors: Array<string> = []
        for (const { endpoint, i } of order) {
          const result = yield* Effect.either(
            Effect.zipRight(checkIdentity(i, endpoint), operation(endpoint.client)).pipe(
              Effect.timeoutFail({
                duration: callTimeout,
                onTimeout: () =>
                  new ChainRpcError({ chain, message: `no answer within ${Duration.format(callTimeout)}` })
              })
            )
          )
          if (result._tag === "Right") {
            yield* succeeded(i)
            return result.right
          }
          const error = result.left
          if (!(error instanceof ChainRpcError)) {
            if (sends && errors.length > 0) {
              return yield* new ChainRpcError({
                chain,
                message: `${endpoint.label} refused the bytes after ${errors.join("; ")}, which may have accepted them`
              })
            }
            return yield* Effect.fail(error)
          }
          yield* failed(i, error)
          errors.push(`${endpoint.label}: ${error.message}`)
        }
        return yield* new ChainRpcError({
          chain,
          message:
            errors.length === 0
              ? "no usable node (every configured node serves another chain)"
              : `every node failed — ${errors.join("; ")}`
        })
      })

    // one node: nothing to fail over to, nothing for /health to compare
    const health =
      endpoints.length === 1
        ? Effect.succeed<ReadonlyArray<EndpointHealth>>([])
        : Effect.map(Ref.get(states), (all) => {
            const now = Date.now()
            return endpoints.map((endpoint, i): EndpointHealth => {
              const s = all[i]
              const state: EndpointHealth["state"] =
                s === undefined
                  ? "unused"
                  : s.identity === "wrong"
                    ? "wrong_chain"
                    : !s.used && s.failures === 0
                      ? "unused"
                      : s.failures === 0
                        ? "ok"
                        : s.coolUntil > now
                          ? "cooling_down"
                          : "failing"
              return {
                endpoint: endpoint.label,
                state,
                consecutiveFailures: s?.failures ?? 0,
                lastError: s?.lastError ?? ""
              }
            })
          })

    const missing = Effect.fail(new ChainRpcError({ chain, message: "this node's client has no energy reads" }))
    const noEnergy: EnergyResources = {
      account: () => missing,
      stake: () => missing,
      lentTo: () => missing,
      prices: missing,
      transferEnergy: () => missing,
      lendable: () => missing,
      stakeFor: () => missing
    }

    const client: ChainClient = {
      chain,
      skipsNumbers: first.client.skipsNumbers,
      genesis: call((c) => c.genesis),
      head: call((c) => c.head),
      finalized: call((c) => c.finalized),
      tip: call((c) => c.tip),
      blockHash: (number) => call((c) => c.blockHash(number)),
      blocks: (from, to) => call((c) => c.blocks(from, to)),
      balance: (address, currency) => call((c) => c.balance(address, currency)),
      finalBalance: (address, currency) => call((c) => c.finalBalance(address, currency)),
      prepare: (request) => call((c) => c.prepare(request)),
      // the same signed bytes to another node: harmless, a node that knows them answers success
      broadcast: (raw) => call((c) => c.broadcast(raw), true),
      landing: (window) => call((c) => c.landing(window)),
      feeEstimate: (request) => call((c) => c.feeEstimate(request)),
      finalNonce: (address) => call((c) => c.finalNonce(address)),
      transaction: (txHash) => call((c) => c.transaction(txHash)),
      finalInclusion: (txHash, blockNumber) => call((c) => c.finalInclusion(txHash, blockNumber)),
      // TRON's Stake 2.0 reads, through whichever node answers (every node of the chain has them)
      ...(first.client.energy === undefined
        ? {}
        : {
            energy: {
              account: (address) => call((c) => (c.energy ?? noEnergy).account(address)),
              stake: (owner) => call((c) => (c.energy ?? noEnergy).stake(owner)),
              lentTo: (owner, receiver) => call((c) => (c.energy ?? noEnergy).lentTo(owner, receiver)),
              prices: call((c) => (c.energy ?? noEnergy).prices),
              transferEnergy: (request) => call((c) => (c.energy ?? noEnergy).transferEnergy(request)),
              lendable: (owner) => call((c) => (c.energy ?? noEnergy).lendable(owner)),
              stakeFor: (owner, energy) => call((c) => (c.energy ?? noEnergy).stakeFor(owner, energy))
            }
          }),
      // each node's own: with several, each value names its node
      nodeChecks: Effect.map(
        Effect.forEach(endpoints, (e) =>
          Effect.map(e.client.nodeChecks ?? Effect.succeed<Readonly<Record<string, string>>>({}), (checks) => ({
            label: e.label,
            checks
          }))
        ),
        (nodes) => {
          const merged: Record<string, string> = {}
          for (const { label, checks } of nodes) {
            for (const [key, value] of Object.entries(checks)) {
              merged[key] =
                endpoints.length === 1
                  ? value
                  : `${merged[key] === undefined ? "" : `${merged[key]}; `}${label}: ${value}`
            }
          }
          return merged
        }
      )
    }
    return { client, health }
  })
