import { Config, Effect } from "effect"
import type { Chain } from "../domain/chain.js"

/**
 * What the service may ask of one node: calls per second (0: no limit) and calls in flight at once. Hosted
 * providers enforce both (the public Solana endpoint: 40 calls per method per 10 s; TronGrid: 15 a second
 * with a key, a 30 s ban beyond): asked faster, a node answers 429 and the reads fail.
 */
export interface NodeBudget {
  readonly requestsPerSecond: number
  readonly inFlight: number
}

/** What the budget has met lately, for /health: how often the node said "too many", and until when it asked to wait. */
export interface NodeThrottle {
  readonly limited: number
  readonly waitingUntil: number
  readonly lastLimit: string
}

/** FACET_NODE_RPS_<CHAIN> and FACET_NODE_IN_FLIGHT_<CHAIN>; the devnets' nodes: no limit. */
export const nodeBudgetConfig = (chain: Chain, network: "devnet" | "mainnet") =>
  Config.all({
    requestsPerSecond: Config.number(`FACET_NODE_RPS_${chain}`).pipe(
      Config.withDefault(network === "devnet" ? 0 : chain === "TRC20" ? 12 : chain === "SOLANA" ? 8 : 25),
      Config.validate({ message: `FACET_NODE_RPS_${chain} must be 0 (no limit) or more`, validation: (n) => Number.isFinite(n) && n >= 0 })
    ),
    inFlight: Config.integer(`FACET_NODE_IN_FLIGHT_${chain}`).pipe(
      Config.withDefault(network === "devnet" ? 64 : 8),
      Config.validate({ message: `FACET_NODE_IN_FLIGHT_${chain} must be 1 or more`, validation: (n) => n >= 1 })
    )
  })

/** The most a node's Retry-After is honoured for at once (a longer ban is waited out in several steps, failing over meanwhile). */
const MAX_WAIT_MS = 30_000
/** 429s in a row before the call fails (and the failover client tries the next node). */
const MAX_LIMITED_TRIES = 4

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** How long a 429 (or 503) asks to wait: Retry-After in seconds or as a date; else a backoff by the tries so far. */
export const retryAfterMs = (header: string | null, tries: number, now: number): number => {
  const backoff = Math.min(MAX_WAIT_MS, 500 * 2 ** tries)
  if (header === null) return backoff
  const seconds = Number(header)
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(MAX_WAIT_MS, seconds * 1000)
  const at = Date.parse(header)
  return Number.isNaN(at) ? backoff : Math.min(MAX_WAIT_MS, Math.max(0, at - now))
}

/**
 * A `fetch` for one node's client (viem, @solana/web3.js, the TRON client) that keeps to its budget: at most
 * `inFlight` calls at once, at most `requestsPerSecond` started a second (spaced evenly, no burst), and a 429 answered by waiting what the node asked (Retry-After) before asking again — every call to
 * the node waits then, as a provider's ban is the node's, not the call's. After a few 429s in a row the answer
 * is handed back (the read fails; the failover client asks the next node). A 429 means the node did not take
 * the request, so asking again is safe for a broadcast too (the same signed bytes).
 */
export const makeBudgetedFetch = (budget: NodeBudget, base: typeof fetch = fetch) => {
  // no burst: calls are spaced 1/rate apart, so no second (however a provider counts it) sees more than the rate
  let tokens = 1
  let refilledAt = Date.now()
  let running = 0
  const queue: Array<() => void> = []
  const throttle = { limited: 0, waitingUntil: 0, lastLimit: "" }

  const acquire = async () => {
    if (running >= budget.inFlight) await new Promise<void>((resolve) => queue.push(resolve))
    running += 1
    for (;;) {
      const now = Date.now()
      if (throttle.waitingUntil > now) {
        await sleep(throttle.waitingUntil - now)
        continue
      }
      if (budget.requestsPerSecond <= 0) return
      tokens = Math.min(1, tokens + ((now - refilledAt) / 1000) * budget.requestsPerSecond)
      refilledAt = now
      if (tokens >= 1) {
        tokens -= 1
        return
      }
      await sleep(Math.ceil(((1 - tokens) / budget.requestsPerSecond) * 1000))
    }
  }
  const release = () => {
    running -= 1
    queue.shift()?.()
  }

  const budgeted = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> => {
    for (let tries = 0; ; tries++) {
      await acquire()
      let response: Response
      try {
        response = await base(input, init)
      } finally {
        release()
      }
      if (response.status !== 429 || tries + 1 >= MAX_LIMITED_TRIES) return response
      const wait = retryAfterMs(response.headers.get("retry-after"), tries, Date.now())
      throttle.limited += 1
      throttle.lastLimit = `HTTP 429${response.headers.get("retry-after") === null ? "" : ` (Retry-After ${response.headers.get("retry-after")})`}`
      throttle.waitingUntil = Math.max(throttle.waitingUntil, Date.now() + wait)
      // the body is not read: a 429's body is the provider's explanation, and the call is asked again
      await response.body?.cancel().catch(() => undefined)
    }
  }
  const state = Effect.sync((): NodeThrottle => ({ ...throttle }))
  return { fetch: budgeted, state }
}

/** The budget's line in /health's checks once the node has said "too many": how often, and how long it still asks to wait. */
export const throttleCheck = (chain: Chain, budget: NodeBudget, state: Effect.Effect<NodeThrottle>) =>
  Effect.map(state, (t): Readonly<Record<string, string>> => {
    if (t.limited === 0) return {}
    const waiting = t.waitingUntil - Date.now()
    const limits = `${budget.requestsPerSecond > 0 ? `${budget.requestsPerSecond} calls a second` : "no rate set"}, ${budget.inFlight} at once`
    return {
      [`${chain.toLowerCase()}_node_rate_limit`]: `the node answered "too many requests" ${t.limited} times (last: ${t.lastLimit})` +
        `${waiting > 0 ? `; waiting ${Math.ceil(waiting / 1000)} s more as it asked` : ""}; budget ${limits} (FACET_NODE_RPS_${chain}, FACET_NODE_IN_FLIGHT_${chain})`
    }
  })

/** No limit (the devnets, and clients made by tests). */
export const UNLIMITED: NodeBudget = { requestsPerSecond: 0, inFlight: 64 }
