import { Effect } from "effect"
import * as http from "node:http"
import { serveOnLoopback } from "../src/devnet/loopback-server.js"

/** TronGrid's refusal beyond a key's rate, as its docs show it: 403, no Retry-After, a ban (30 s there). */
export const tronGridBan = (seconds: number) => ({
  ms: seconds * 1000,
  status: 403,
  body: JSON.stringify({
    Success: false,
    Error: `The key exceeds the frequency limit(15), and the query server is suspended for ${seconds}s`,
    StatusCode: 403
  })
})

/**
 * A provider's rate limit in front of a node: of the calls `counted` picks (all unless given), it takes
 * `perSecond` in any second and answers the rest 429 with `Retry-After`, as hosted providers do (the
 * public Solana endpoint counts per method) — or, given `ban`, refuses as that provider does and then
 * every call for `ms` (TronGrid). What it takes goes to `target`, or is answered `{}` without one.
 * Closed with its scope.
 */
export const startRateLimitedNode = (options: {
  readonly perSecond: number
  readonly retryAfter: string
  readonly target?: string
  readonly counted?: (body: string) => boolean
  readonly ban?: { readonly ms: number; readonly status: number; readonly body: string }
}) =>
  Effect.gen(function* () {
    const started: Array<number> = []
    const counts = { ok: 0, limited: 0 }
    let bannedUntil = 0
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        if (options.counted?.(body) ?? true) {
          const now = Date.now()
          while (started.length > 0 && (started[0] ?? now) <= now - 1000) started.shift()
          if (started.length >= options.perSecond || bannedUntil > now) {
            counts.limited += 1
            if (options.ban === undefined) {
              res
                .writeHead(429, { "retry-after": options.retryAfter, "content-type": "text/plain" })
                .end("Too many requests")
              return
            }
            bannedUntil = Math.max(bannedUntil, now + options.ban.ms)
            res.writeHead(options.ban.status, { "content-type": "application/json" }).end(options.ban.body)
            return
          }
          started.push(now)
          counts.ok += 1
        }
        if (options.target === undefined) {
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
          return
        }
        fetch(options.target, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
          async (answer) =>
            res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text()),
          () => res.writeHead(502).end()
        )
      })
    })
    const url = yield* serveOnLoopback(server, "rate-limited node").pipe(Effect.orDie)
    return { url, served: () => ({ ...counts }) }
  })
