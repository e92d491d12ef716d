import { Effect } from "effect"
import * as http from "node:http"
import { serveOnLoopback } from "../../src/devnet/loopback-server.js"
import { onJsonRequest, rpcId, rpcMethod } from "../node-proxy.js"

/**
 * One of a provider's limits: at most `max` calls in any `ms` — of every call (`all`), of each method on
 * its own (`each method`: the public Solana endpoint's 40 per method per 10 s) or of one method. Beyond it
 * the provider refuses as real ones do: `429` with Retry-After (the time until the window has room);
 * `ban`: TronGrid's 403 "the query server is suspended for Ns", every call refused until then; `rpc-error`:
 * a JSON-RPC error -32005 "limit exceeded" in a 200, as several BSC providers answer `eth_getLogs`.
 */
export interface ProviderWindow {
  readonly label: string
  readonly ms: number
  readonly max: number
  readonly of: "all" | "each method" | { readonly method: string }
  readonly refusal: "429" | "ban" | "rpc-error"
}

export interface ProviderCall {
  readonly path: string
  /** The JSON body (one element of a JSON-RPC batch). */
  readonly body: unknown
}

export interface ProviderOptions {
  /** The node behind it, asked for each call (it moves with each start of the service). */
  readonly target: () => string | undefined
  readonly windows: ReadonlyArray<ProviderWindow>
  /** How long a ban lasts (`ban` refusals). */
  readonly banSeconds?: number
  /** What this provider's node answers itself (a node that no longer holds what is asked). */
  readonly answer?: (call: ProviderCall) => unknown
  /** Changes what the node behind answered (a node that leaves things out). */
  readonly rewrite?: (call: ProviderCall, answer: unknown) => unknown
  /** Sees every answer given (to know what was really read). */
  readonly onAnswer?: (call: ProviderCall, answer: unknown) => void
}

export interface ProviderNode {
  readonly url: string
  /** Calls answered, calls refused by each window (and by a ban), bans begun. */
  readonly stats: () => {
    readonly answered: number
    readonly refused: ReadonlyMap<string, number>
    readonly bans: number
  }
  /** How long the key was banned between `from` and `to` (epoch ms): the time nobody could read through it. */
  readonly bannedBetween: (from: number, to: number) => number
  /** Another user of the same key calls `perSecond` for `ms` (what it uses counts against the `all` windows; beyond them it bans the key). */
  readonly neighbour: (perSecond: number, ms: number) => void
}

const methodOf = (call: ProviderCall) => rpcMethod(call.body) ?? call.path

/** A provider's node in front of a real one, with the provider's limits and the node's own gaps. Closed with its scope. */
export const startProviderNode = (options: ProviderOptions) =>
  Effect.gen(function* () {
    // the start times of the calls each window counted, per window (and per method for "each method")
    const counted = new Map<string, Array<number>>()
    const refused = new Map<string, number>()
    let answered = 0
    let bans = 0
    let bannedUntil = 0
    const banMs = (options.banSeconds ?? 30) * 1000
    /** Each ban as it lasted: a call during one extends it. */
    const banned: Array<{ from: number; until: number }> = []
    const ban = (now: number) => {
      const last = banned.at(-1)
      if (last !== undefined && last.until >= now) last.until = now + banMs
      else banned.push({ from: now, until: now + banMs })
      bannedUntil = now + banMs
    }
    const keyOf = (window: ProviderWindow, call: ProviderCall | undefined): string | undefined =>
      window.of === "all"
        ? window.label
        : call === undefined
          ? undefined
          : window.of === "each method"
            ? `${window.label}:${methodOf(call)}`
            : methodOf(call) === window.of.method
              ? window.label
              : undefined
    const recent = (key: string, now: number, ms: number) => {
      const times = counted.get(key) ?? []
      while (times.length > 0 && (times[0] ?? now) <= now - ms) times.shift()
      counted.set(key, times)
      return times
    }
    /** Admits the calls (undefined: the neighbour's one call) or names the window that refuses them and when it has room. */
    const admit = (
      calls: ReadonlyArray<ProviderCall | undefined>,
      now: number
    ): { readonly window: ProviderWindow; readonly key: string; readonly retryMs: number } | undefined => {
      const wanted = new Map<string, { window: ProviderWindow; n: number }>()
      for (const call of calls) {
        for (const window of options.windows) {
          const key = keyOf(window, call)
          if (key !== undefined) wanted.set(key, { window, n: (wanted.get(key)?.n ?? 0) + 1 })
        }
      }
      for (const [key, { window, n }] of wanted) {
        const times = recent(key, now, window.ms)
        if (times.length + n > window.max)
          return { window, key, retryMs: Math.max(1, (times[0] ?? now) + window.ms - now) }
      }
      for (const [key, { n }] of wanted) for (let i = 0; i < n; i++) counted.get(key)?.push(now)
      return undefined
    }
    const banBody = () =>
      JSON.stringify({
        Success: false,
        Error: `The key exceeds the frequency limit, and the query server is suspended for ${banMs / 1000}s`,
        StatusCode: 403
      })
    const refuse = (label: string) => refused.set(label, (refused.get(label) ?? 0) + 1)

    const forward = async (path: string, body: unknown): Promise<unknown> => {
      const base = options.target()
      if (base === undefined) throw new Error("no node behind this provider yet")
      const response = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body)
      })
      return response.json()
    }
    const one = async (call: ProviderCall): Promise<unknown> => {
      const own = options.answer?.(call)
      const answer =
        own !== undefined
          ? own
          : options.rewrite === undefined
            ? await forward(call.path, call.body)
            : options.rewrite(call, await forward(call.path, call.body))
      options.onAnswer?.(call, answer)
      return answer
    }

    const server = http.createServer((req, res) => {
      onJsonRequest(req, (path, body) => {
        const calls: ReadonlyArray<ProviderCall> = Array.isArray(body)
          ? body.map((b: unknown) => ({ path, body: b }))
          : [{ path, body }]
        const now = Date.now()
        if (bannedUntil > now) {
          // a call during the ban is refused, and the ban starts again from it (a client must wait it out)
          refuse("during a ban")
          ban(now)
          res.writeHead(403, { "content-type": "application/json" }).end(banBody())
          return
        }
        const refusal = admit(calls, now)
        if (refusal !== undefined) {
          // per method, the method refused is named
          refuse(refusal.key)
          if (refusal.window.refusal === "ban") {
            bans += 1
            ban(now)
            res.writeHead(403, { "content-type": "application/json" }).end(banBody())
          } else if (refusal.window.refusal === "429") {
            res
              .writeHead(429, {
                "retry-after": String(Math.ceil(refusal.retryMs / 1000)),
                "content-type": "text/plain"
              })
              .end("Too many requests")
          } else {
            const error = (call: ProviderCall) => ({
              jsonrpc: "2.0",
              id: rpcId(call.body),
              error: { code: -32005, message: "limit exceeded" }
            })
            res
              .writeHead(200, { "content-type": "application/json" })
              .end(JSON.stringify(Array.isArray(body) ? calls.map(error) : error(calls[0] ?? { path, body })))
          }
          return
        }
        answered += calls.length
        const reply = Array.isArray(body) ? Promise.all(calls.map(one)) : one({ path, body })
        reply.then(
          (result) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result)),
          (error: unknown) => res.writeHead(502).end(String(error))
        )
      })
    })
    const timers = new Set<NodeJS.Timeout>()
    const neighbour = (perSecond: number, ms: number) => {
      const until = Date.now() + ms
      const timer = setInterval(
        () => {
          const now = Date.now()
          if (now >= until || bannedUntil > now) {
            clearInterval(timer)
            timers.delete(timer)
            return
          }
          const refusal = admit([undefined], now)
          if (refusal?.window.refusal === "ban") {
            // the key is banned for everyone who uses it
            refuse(`${refusal.window.label} (the neighbour)`)
            bans += 1
            ban(now)
          }
        },
        Math.max(1, Math.floor(1000 / perSecond))
      )
      timers.add(timer)
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => timers.forEach(clearInterval)))
    const url = yield* serveOnLoopback(server, "provider node").pipe(Effect.orDie)
    const bannedBetween = (from: number, to: number) =>
      banned.reduce((sum, b) => sum + Math.max(0, Math.min(to, b.until) - Math.max(from, b.from)), 0)
    return {
      url,
      stats: () => ({ answered, refused: new Map(refused), bans }),
      bannedBetween,
      neighbour
    } satisfies ProviderNode
  })
