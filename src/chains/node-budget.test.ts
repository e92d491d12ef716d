import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startRateLimitedNode, tronGridBan } from "../../test/rate-limited-node.js"
import { makeBudgetedFetch, readLimit, retryAfterMs, throttleCheck } from "./node-budget.js"

describe("a node's request budget", () => {
  // every call at once, the 429s not waited out: a rate-limited provider froze catch-up (#32 item 3)
  it.scoped(
    "kept to, a provider that allows it never says 'too many'; ignored, its 429s are waited out as it asks and then handed back, and said in the checks",
    () =>
      Effect.gen(function* () {
        const strict = yield* startRateLimitedNode({ perSecond: 5, retryAfter: "1" })
        const kept = makeBudgetedFetch({ requestsPerSecond: 4, inFlight: 2 })
        const answers = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 12 }, () => kept.fetch(strict.url).then((r) => r.status)))
        )
        expect(answers.every((s) => s === 200)).toBe(true)
        expect(strict.served()).toEqual({ ok: 12, limited: 0 })
        expect(yield* throttleCheck("TRC20", { requestsPerSecond: 4, inFlight: 2 }, kept.state)).toEqual({})

        const other = yield* startRateLimitedNode({ perSecond: 5, retryAfter: "1" })
        const unbudgeted = makeBudgetedFetch({ requestsPerSecond: 0, inFlight: 64 })
        const rushed = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 12 }, () => unbudgeted.fetch(other.url).then((r) => r.status)))
        )
        // the ones refused were asked again after the second the node asked for: all got through
        expect(rushed.filter((s) => s === 200).length).toBe(12)
        expect(other.served().limited).toBeGreaterThan(0)
        const check = yield* throttleCheck("TRC20", { requestsPerSecond: 0, inFlight: 64 }, unbudgeted.state)
        expect(check.trc20_node_rate_limit).toMatch(
          /^the node answered "too many requests" \d+ times \(last: HTTP 429 \(Retry-After 1\)\); budget no rate set, 64 at once \(FACET_NODE_RPS_TRC20, FACET_NODE_IN_FLIGHT_TRC20\)/
        )
      }),
    { timeout: 30_000 }
  )

  // TronGrid refuses 403 with its ban in words, no Retry-After: read as a bad answer, its ban was never
  // waited out and /health never named it (#32 scenario "real providers")
  it.scoped(
    "TronGrid's 403 ban ('suspended for Ns') is waited out as it names, nothing asked meanwhile, and said in the checks; another 403 is the caller's",
    () =>
      Effect.gen(function* () {
        const node = yield* startRateLimitedNode({ perSecond: 3, retryAfter: "1", ban: tronGridBan(2) })
        const unbudgeted = makeBudgetedFetch({ requestsPerSecond: 0, inFlight: 64 })
        const started = Date.now()
        const answers = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 6 }, () => unbudgeted.fetch(node.url).then((r) => r.status)))
        )
        expect(answers).toEqual([200, 200, 200, 200, 200, 200])
        // the ban (2 s from the last refusal) was waited out once: the refused three were refused once each
        expect(Date.now() - started).toBeGreaterThanOrEqual(1_900)
        expect(node.served()).toEqual({ ok: 6, limited: 3 })
        const check = yield* throttleCheck("TRC20", { requestsPerSecond: 0, inFlight: 64 }, unbudgeted.state)
        expect(check.trc20_node_rate_limit).toMatch(
          /^the node answered "too many requests" 3 times \(last: HTTP 403: The key exceeds the frequency limit\(15\), and the query server is suspended for 2s\); budget/
        )

        const forbidden = yield* startRateLimitedNode({
          perSecond: 0,
          retryAfter: "1",
          ban: { ms: 0, status: 403, body: JSON.stringify({ Error: "invalid API key" }) }
        })
        const refused = makeBudgetedFetch({ requestsPerSecond: 0, inFlight: 4 })
        const answer = yield* Effect.promise(() =>
          refused.fetch(forbidden.url).then(async (r) => ({ status: r.status, body: await r.text() }))
        )
        expect(answer).toEqual({ status: 403, body: JSON.stringify({ Error: "invalid API key" }) })
        expect(forbidden.served().limited).toBe(1)
        expect((yield* refused.state).limited).toBe(0)
      }),
    { timeout: 30_000 }
  )

  // a 429 to a broadcast may come from a proxy that passed it on: a re-send answered "nonce too low" read as a
  // refusal of the first, and custody unlocked a payout that landed (review of #32 item 3)
  it.scoped("a send is never asked twice: its 429 is handed back at once (and recorded)", () =>
    Effect.gen(function* () {
      const banned = yield* startRateLimitedNode({ perSecond: 0, retryAfter: "5" })
      const budgeted = makeBudgetedFetch({ requestsPerSecond: 0, inFlight: 4 })
      const status = yield* Effect.promise(() =>
        budgeted.send(banned.url, { method: "POST", body: "{}" }).then((r) => r.status)
      )
      expect(status).toBe(429)
      expect(banned.served()).toEqual({ ok: 0, limited: 1 })
      expect((yield* budgeted.state).limited).toBe(1)
    })
  )

  it.scoped("a JSON-RPC batch counts each call against the rate; a call whose caller gives up leaves the line", () =>
    Effect.gen(function* () {
      const node = yield* startRateLimitedNode({ perSecond: 100, retryAfter: "1" })
      const budgeted = makeBudgetedFetch({ requestsPerSecond: 10, inFlight: 1 })
      const started = Date.now()
      const batch = JSON.stringify(
        Array.from({ length: 5 }, (_, id) => ({ jsonrpc: "2.0", id, method: "eth_blockNumber" }))
      )
      yield* Effect.promise(() => budgeted.fetch(node.url, { method: "POST", body: batch }))
      yield* Effect.promise(() => budgeted.fetch(node.url, { method: "POST", body: "{}" }))
      // the single call waited for the five before it (0.5 s at 10 a second)
      expect(Date.now() - started).toBeGreaterThanOrEqual(400)
      // one in flight: a second caller waits for the permit, and leaves when its signal aborts
      const controller = new AbortController()
      const slow = budgeted.fetch(node.url, { method: "POST", body: "{}" })
      const waiting = budgeted.fetch(node.url, { method: "POST", body: "{}", signal: controller.signal }).then(
        () => "answered",
        () => "left"
      )
      controller.abort()
      expect(yield* Effect.promise(() => waiting)).toBe("left")
      expect((yield* Effect.promise(() => slow)).status).toBe(200)
    })
  )

  it("reads Retry-After in seconds or as a date, capped at 30 s; without it, backs off", () => {
    const now = Date.parse("2026-11-26T07:00:00Z")
    expect(retryAfterMs("2", 0, now)).toBe(2_000)
    expect(retryAfterMs("Thu, 26 Nov 2026 07:00:05 GMT", 0, now)).toBe(5_000)
    expect(retryAfterMs("600", 0, now)).toBe(30_000)
    expect([retryAfterMs(null, 0, now), retryAfterMs(null, 3, now), retryAfterMs(null, 9, now)]).toEqual([
      500, 4_000, 30_000
    ])
  })

  it.effect("a 503 that says 'rate limit' is a limit (TronGrid beyond a key's rate); a plain 503 or 403 is not", () =>
    Effect.gen(function* () {
      const now = Date.now()
      const limited = yield* Effect.promise(() =>
        readLimit(
          new Response(JSON.stringify({ Error: "rate limit exceeded" }), {
            status: 503,
            headers: { "retry-after": "3" }
          }),
          0,
          now
        )
      )
      expect(limited).toEqual({ waitMs: 3_000, said: "HTTP 503: rate limit exceeded" })
      expect(
        yield* Effect.promise(() => readLimit(new Response("Service Unavailable", { status: 503 }), 0, now))
      ).toBeUndefined()
      expect(yield* Effect.promise(() => readLimit(new Response("forbidden", { status: 403 }), 0, now))).toBeUndefined()
      // words that are not a rate limit: geth's fee cap, a key suspended for good (review)
      expect(
        yield* Effect.promise(() =>
          readLimit(
            new Response(JSON.stringify({ error: "tx fee (1.2 ether) exceeds the configured cap (1.00 ether)" }), {
              status: 403
            }),
            0,
            now
          )
        )
      ).toBeUndefined()
      expect(
        yield* Effect.promise(() =>
          readLimit(new Response(JSON.stringify({ error: "project suspended" }), { status: 403 }), 0, now)
        )
      ).toBeUndefined()
      expect(yield* Effect.promise(() => readLimit(new Response("{}", { status: 200 }), 0, now))).toBeUndefined()
    })
  )
})
