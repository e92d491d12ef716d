import { Config, Effect } from "effect"
import type { Chain } from "../domain/chain.js"

/**
 * What the service may ask of one node: calls per second (0: no limit) and calls in flight at once. Hosted
 * providers enforce both (the public Solana endpoint: 40 calls per method per 10 s; TronGrid: 15 a second
 * with a key, a 30 s ban beyond, answered 403): asked faster, a node refuses and the reads fail.
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
      Config.validate({
        message: `FACET_NODE_RPS_${chain} must be 0 (no limit) or more`,
        validation: (n) => Number.isFinite(n) && n >= 0
      })
    ),
    inFlight: Config.integer(`FACET_NODE_IN_FLIGHT_${chain}`).pipe(
      Config.withDefault(network === "devnet" ? 64 : 8),
      Config.validate({ message: `FACET_NODE_IN_FLIGHT_${chain} must be 1 or more`, validation: (n) => n >= 1 })
    )
  })

/** The most a node's Retry-After is honoured for at once (a longer ban is waited out in several steps, failing over meanwhile). */
const MAX_WAIT_MS = 30_000
/** Limits in a row before the call fails (and the failover client tries the next node). */
const MAX_LIMITED_TRIES = 4

/** How long a refusal asks to wait: Retry-After in seconds or as a date; else a backoff by the tries so far. */
export const retryAfterMs = (header: string | null, tries: number, now: number): number => {
  const backoff = Math.min(MAX_WAIT_MS, 500 * 2 ** tries)
  if (header === null) return backoff
  const seconds = Number(header)
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(MAX_WAIT_MS, seconds * 1000)
  const at = Date.parse(header)
  return Number.isNaN(at) ? backoff : Math.min(MAX_WAIT_MS, Math.max(0, at - now))
}

/**
 * What a provider's "too many requests" looks like: a 429; or a 403 or 503 that says so in its body —
 * TronGrid answers 403 "The key exceeds the frequency limit(15), and the query server is suspended for 30s"
 * (a ban, no Retry-After) and 503 beyond a key's rate. Any other 403 (a bad key) or 503 is the caller's to
 * read. Undefined: not a limit.
 */
export const readLimit = async (
  response: Response,
  tries: number,
  now: number
): Promise<{ readonly waitMs: number; readonly said: string } | undefined> => {
  const retryAfter = response.headers.get("retry-after")
  if (response.status === 429) {
    return {
      waitMs: retryAfterMs(retryAfter, tries, now),
      said: `HTTP 429${retryAfter === null ? "" : ` (Retry-After ${retryAfter})`}`
    }
  }
  if (response.status !== 403 && response.status !== 503) return undefined
  // a copy is read: the caller gets the answer whole when it is not a limit
  const text = (
    await response
      .clone()
      .text()
      .catch(() => "")
  ).slice(0, 1000)
  // narrow words: "exceeds the" alone is also geth's fee cap, "suspended" alone a key suspended for good
  if (!/frequency limit|rate limit|too many requests|suspended for \d+\s*s/i.test(text)) return undefined
  const suspended = /suspended for (\d+)\s*s/i.exec(text)?.[1]
  const waitMs =
    retryAfter !== null
      ? retryAfterMs(retryAfter, tries, now)
      : suspended !== undefined
        ? Math.min(MAX_WAIT_MS, Number(suspended) * 1000)
        : retryAfterMs(null, tries, now)
  const message = /"(?:Error|error|message)"\s*:\s*"([^"]{1,160})/.exec(text)?.[1] ?? text.slice(0, 160)
  return { waitMs, said: `HTTP ${response.status}: ${message}` }
}

/** Calls a request carries: a JSON-RPC batch (viem sends up to 16 at once) is billed per call by providers. */
const callsIn = (init: Parameters<typeof fetch>[1]): number => {
  const body = init?.body
  if (typeof body !== "string" || !body.startsWith("[")) return 1
  try {
    const parsed: unknown = JSON.parse(body)
    return Array.isArray(parsed) ? Math.max(1, parsed.length) : 1
  } catch {
    return 1
  }
}

/** Rejects when the caller gave up (its signal aborted): a call waiting for its turn leaves the line. */
const abortable = (signal: AbortSignal | null | undefined, wait: (settle: () => void) => () => void) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason)
    const onAbort = () => {
      cancel()
      reject(signal?.reason)
    }
    const cancel = wait(() => {
      signal?.removeEventListener("abort", onAbort)
      resolve()
    })
    signal?.addEventListener("abort", onAbort, { once: true })
  })

/**
 * A `fetch` for one node's client (viem, @solana/web3.js, the TRON client) that keeps to its budget: at most
 * `inFlight` calls at once; at most `requestsPerSecond` calls started a second, spaced evenly with no burst
 * (a JSON-RPC batch counts each call it carries); a call whose caller gives up (its signal) leaves the line.
 *
 * `fetch` also waits out a "too many requests" (`readLimit`) as the node asks (Retry-After, or the ban it
 * names; every call to the node waits then, as a provider's ban is the node's) and asks again, handing
 * the answer back after a few in a row (the failover client then asks the next node). `send` never asks
 * twice: a limit answered to a broadcast may come from a proxy
 * that passed the transaction on, and custody must see the failure itself (a second send answered "nonce
 * too low" would read as a refusal of the first) — it only waits its turn and records the limit.
 */
export const makeBudgetedFetch = (budget: NodeBudget, base: typeof fetch = fetch) => {
  let tokens = 1
  let refilledAt = Date.now()
  let running = 0
  const queue: Array<() => void> = []
  const throttle = { limited: 0, waitingUntil: 0, lastLimit: "" }

  const slot = (signal: AbortSignal | null | undefined) => {
    if (running < budget.inFlight) {
      running += 1
      return Promise.resolve()
    }
    // the permit is handed over by `release` (running stays counted): nobody slips in between
    return abortable(signal, (settle) => {
      queue.push(settle)
      return () => {
        const at = queue.indexOf(settle)
        if (at >= 0) queue.splice(at, 1)
      }
    })
  }
  const release = () => {
    const next = queue.shift()
    if (next === undefined) running -= 1
    else next()
  }
  const pause = (ms: number, signal: AbortSignal | null | undefined) =>
    abortable(signal, (settle) => {
      const timer = setTimeout(settle, ms)
      return () => clearTimeout(timer)
    })
  /** A permit and the calls' share of the rate; the permit is the caller's to release. */
  const acquire = async (cost: number, signal: AbortSignal | null | undefined) => {
    await slot(signal)
    try {
      for (;;) {
        const now = Date.now()
        if (throttle.waitingUntil > now) {
          await pause(throttle.waitingUntil - now, signal)
          continue
        }
        if (budget.requestsPerSecond <= 0) return
        tokens = Math.min(1, tokens + ((now - refilledAt) / 1000) * budget.requestsPerSecond)
        refilledAt = now
        if (tokens >= 1) {
          // a batch may take the bucket below zero: the calls after it wait for what it used
          tokens -= cost
          return
        }
        await pause(Math.ceil(((1 - tokens) / budget.requestsPerSecond) * 1000), signal)
      }
    } catch (aborted) {
      release()
      throw aborted
    }
  }
  const noteLimit = (limit: { readonly waitMs: number; readonly said: string }) => {
    throttle.limited += 1
    throttle.lastLimit = limit.said
    throttle.waitingUntil = Math.max(throttle.waitingUntil, Date.now() + limit.waitMs)
  }
  const once = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    // a batch's calls are counted only where a rate is set (no parse of every body on the devnets)
    await acquire(budget.requestsPerSecond > 0 ? callsIn(init) : 1, init?.signal)
    try {
      return await base(input, init)
    } finally {
      release()
    }
  }

  const budgeted = async (
    input: Parameters<typeof fetch>[0],
    init?: Parameters<typeof fetch>[1]
  ): Promise<Response> => {
    for (let tries = 0; ; tries++) {
      const response = await once(input, init)
      const limit = await readLimit(response, tries, Date.now())
      if (limit === undefined) return response
      noteLimit(limit)
      if (tries + 1 >= MAX_LIMITED_TRIES) return response
      // the body is not read further: it is the provider's explanation, and the call is asked again
      await response.body?.cancel().catch(() => undefined)
    }
  }
  const send = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> => {
    const response = await once(input, init)
    const limit = await readLimit(response, 0, Date.now())
    if (limit !== undefined) noteLimit(limit)
    return response
  }
  const state = Effect.sync((): NodeThrottle => ({ ...throttle }))
  return { fetch: budgeted, send, state }
}

/** The budget's line in /health's checks once the node has said "too many": how often, and how long it still asks to wait. */
export const throttleCheck = (chain: Chain, budget: NodeBudget, state: Effect.Effect<NodeThrottle>) =>
  Effect.map(state, (t): Readonly<Record<string, string>> => {
    if (t.limited === 0) return {}
    const waiting = t.waitingUntil - Date.now()
    const limits = `${budget.requestsPerSecond > 0 ? `${budget.requestsPerSecond} calls a second` : "no rate set"}, ${budget.inFlight} at once`
    return {
      [`${chain.toLowerCase()}_node_rate_limit`]:
        `the node answered "too many requests" ${t.limited} times (last: ${t.lastLimit})` +
        `${waiting > 0 ? `; waiting ${Math.ceil(waiting / 1000)} s more as it asked` : ""}; budget ${limits} (FACET_NODE_RPS_${chain}, FACET_NODE_IN_FLIGHT_${chain})`
    }
  })

/** No limit (the devnets, and clients made by tests). */
export const UNLIMITED: NodeBudget = { requestsPerSecond: 0, inFlight: 64 }
