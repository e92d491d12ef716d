import { Effect } from "effect"
import * as http from "node:http"
import { onJsonRequest, rpcId, rpcMethod, rpcParams } from "../node-proxy.js"
import type { Random } from "./seeded-random.js"

/**
 * A bad node in front of a good one: every request is forwarded to the devnet unless the dice say it
 * meets a fault, as remote providers fail in practice. HTTP faults hit a whole request; chain faults hit
 * one call (one element of a JSON-RPC batch), each in the dialect of its chain.
 */
export const HTTP_FAULTS = [
  "latency",
  "timeout",
  "drop",
  "rate_limit",
  "server_error",
  "truncated",
  "malformed"
] as const
export const CHAIN_FAULTS = ["head_backwards", "not_found", "range_refused", "fork"] as const
export type FaultKind = (typeof HTTP_FAULTS)[number] | (typeof CHAIN_FAULTS)[number]

export type Dialect = "BEP20" | "TRC20" | "SOLANA"

export interface FaultProxy {
  readonly url: string
  /** Faults injected so far, by kind. */
  readonly injected: () => ReadonlyMap<FaultKind, number>
  /** Turns faults on (with the given share of requests) or off (0). */
  readonly setRate: (rate: number) => void
}

export interface ForkPlan {
  /** A watched address on the fork only: a deposit that must never be credited. */
  readonly victim: `0x${string}`
  /** The token contract whose Transfer log the fork invents. */
  readonly token: `0x${string}`
  /**
   * The branch being served, shared by every node given this plan (a reorg of the chain itself: each
   * node serves it, whichever the indexer reads): the blocks above `from`, until `until` (ms) passes.
   */
  readonly state: { from: bigint; until: number }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const hex = (n: bigint) => `0x${n.toString(16)}`
const parseHex = (value: unknown) =>
  typeof value === "string" && /^0x[0-9a-f]+$/i.test(value) ? BigInt(value) : undefined

/** The fork's version of a block hash: deterministic, so every call agrees on it while the fork is served. */
const forkHash = (hash: string) => `0x${[...hash.slice(2)].reverse().join("")}`

/** Is this call one that reads the chain's head (or final height)? */
const isHeadCall = (dialect: Dialect, path: string, body: unknown) =>
  dialect === "TRC20"
    ? /\/(wallet|walletsolidity)\/getnowblock$/.test(path)
    : dialect === "BEP20"
      ? rpcMethod(body) === "eth_blockNumber"
      : rpcMethod(body) === "getSlot"

/** Is this call one that reads a block (what a lagging node does not have yet)? */
const isBlockCall = (dialect: Dialect, path: string, body: unknown) =>
  dialect === "TRC20"
    ? /\/wallet\/(getblockbynum|gettransactioninfobyblocknum)$/.test(path) && isRecord(body) && body.num !== 0
    : dialect === "BEP20"
      ? rpcMethod(body) === "eth_getBlockByNumber" && rpcParams(body)[0] !== "0x0"
      : rpcMethod(body) === "getBlock"

/** What a node that does not have the block answers, in each dialect. */
const notFound = (dialect: Dialect, path: string, body: unknown): unknown =>
  dialect === "TRC20"
    ? path.endsWith("gettransactioninfobyblocknum")
      ? []
      : {}
    : dialect === "BEP20"
      ? { jsonrpc: "2.0", id: rpcId(body), result: null }
      : {
          jsonrpc: "2.0",
          id: rpcId(body),
          error: { code: -32004, message: `Block not available for slot ${String(rpcParams(body)[0])}` }
        }

/** What providers answer to a log query they will not serve (both forms are seen in the wild). */
const rangeRefusal = (body: unknown, roll: number): unknown => ({
  jsonrpc: "2.0",
  id: rpcId(body),
  error:
    roll < 0.5
      ? { code: -32005, message: "query returned more than 10000 results. Try with this block range [0x1, 0x2]." }
      : { code: -32600, message: "block range is too wide: exceeds the maximum of 5000 blocks" }
})

export const startFaultProxy = (target: string, dialect: Dialect, random: Random, fork?: ForkPlan) =>
  Effect.acquireRelease(
    Effect.async<FaultProxy & { readonly server: http.Server }>((resume) => {
      let rate = 0
      const counts = new Map<FaultKind, number>()
      const count = (kind: FaultKind) => counts.set(kind, (counts.get(kind) ?? 0) + 1)
      const held = new Set<http.ServerResponse>()

      const forward = async (path: string, body: unknown): Promise<unknown> => {
        const response = await fetch(`${target}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body)
        })
        return response.json()
      }

      const branch = fork?.state ?? { from: 0n, until: 0 }
      const inFork = (n: bigint | undefined) => n !== undefined && Date.now() < branch.until && n > branch.from

      /** The fork's version of an EVM answer: its blocks renamed (the invented deposits are added by `inventedLogs`). */
      const forkAnswer = (body: unknown, answer: unknown): unknown => {
        if (fork === undefined || !isRecord(answer)) return answer
        const method = rpcMethod(body)
        const result = answer.result
        if (method === "eth_getBlockByNumber" && isRecord(result)) {
          const n = parseHex(result.number)
          if (!inFork(n) || typeof result.hash !== "string" || typeof result.parentHash !== "string") return answer
          const parentInFork = inFork(n === undefined ? undefined : n - 1n)
          return {
            ...answer,
            result: {
              ...result,
              hash: forkHash(result.hash),
              parentHash: parentInFork ? forkHash(result.parentHash) : result.parentHash,
              logsBloom: `0x${"f".repeat(512)}`
            }
          }
        }
        if (method === "eth_getLogs" && Array.isArray(result)) {
          const renamed = result.map((log) =>
            isRecord(log) && typeof log.blockHash === "string" && inFork(parseHex(log.blockNumber))
              ? { ...log, blockHash: forkHash(log.blockHash) }
              : log
          )
          return { ...answer, result: renamed }
        }
        return answer
      }

      /**
       * The fork's invented deposits: every fork block carries one (the same for every query, as a real
       * branch would), so any log query that covers a fork block sees it.
       */
      const inventedLogs = async (body: unknown): Promise<ReadonlyArray<unknown>> => {
        if (fork === undefined || rpcMethod(body) !== "eth_getLogs") return []
        const filter = rpcParams(body)[0]
        if (!isRecord(filter)) return []
        const from = parseHex(filter.fromBlock) ?? 0n
        const to = parseHex(filter.toBlock) ?? 0n
        const logs: Array<unknown> = []
        for (let n = from > branch.from ? from : branch.from + 1n; n <= to && inFork(n) && logs.length < 8; n++) {
          const block = await forward("/", {
            jsonrpc: "2.0",
            id: 1,
            method: "eth_getBlockByNumber",
            params: [hex(n), false]
          })
          const hash =
            isRecord(block) && isRecord(block.result) && typeof block.result.hash === "string"
              ? block.result.hash
              : undefined
          if (hash === undefined) break
          logs.push({
            address: fork.token,
            topics: [
              "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
              `0x${"0".repeat(24)}${"ab".repeat(20)}`,
              `0x${"0".repeat(24)}${fork.victim.slice(2).toLowerCase()}`
            ],
            data: `0x${(777n * 10n ** 18n).toString(16).padStart(64, "0")}`,
            blockNumber: hex(n),
            blockHash: forkHash(hash),
            transactionHash: `0x${"f0".repeat(16)}${n.toString(16).padStart(32, "0")}`,
            transactionIndex: "0x0",
            logIndex: "0x7f",
            removed: false
          })
        }
        return logs
      }

      /** One call: forwarded, or answered by a chain fault. */
      const answerCall = async (path: string, body: unknown): Promise<unknown> => {
        // now and then (5 s apart at least) the chain switches to another branch, just as the indexer reads
        // the newest blocks (a fork no read meets tests nothing): for up to 2.5 s the blocks it is reading
        // are another branch's, ended sooner if the chain grows past three blocks deep (the campaign asks
        // for six confirmations). This very call already gets the branch.
        if (
          fork !== undefined &&
          rate > 0 &&
          rpcMethod(body) === "eth_getLogs" &&
          Date.now() > branch.until + 5_000 &&
          random.next() < 0.2
        ) {
          const filter = rpcParams(body)[0]
          const from = isRecord(filter) ? parseHex(filter.fromBlock) : undefined
          const head = await forward("/", { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] })
          const n = isRecord(head) ? parseHex(head.result) : undefined
          if (from !== undefined && n !== undefined && from > 0n && n - (from - 1n) <= 3n) {
            count("fork")
            branch.from = from - 1n
            branch.until = Date.now() + 2_500
          }
        }
        if (rate > 0 && random.next() < rate) {
          const applicable = CHAIN_FAULTS.filter((kind) =>
            kind === "head_backwards"
              ? isHeadCall(dialect, path, body)
              : kind === "not_found"
                ? isBlockCall(dialect, path, body)
                : kind === "range_refused"
                  ? dialect === "BEP20" && rpcMethod(body) === "eth_getLogs"
                  : false
          )
          const kind = applicable.length === 0 ? undefined : random.pick(applicable)
          if (kind === "not_found") {
            count(kind)
            return notFound(dialect, path, body)
          }
          if (kind === "range_refused") {
            count(kind)
            return rangeRefusal(body, random.next())
          }
          if (kind === "head_backwards") {
            count(kind)
            const back = BigInt(1 + random.int(5))
            if (dialect === "TRC20") {
              const now = await forward(path, body)
              const n =
                isRecord(now) && isRecord(now.block_header) && isRecord(now.block_header.raw_data)
                  ? now.block_header.raw_data.number
                  : undefined
              return typeof n === "number" && n > Number(back)
                ? forward("/wallet/getblockbynum", { num: n - Number(back) })
                : now
            }
            const now = await forward(path, body)
            if (!isRecord(now)) return now
            if (dialect === "BEP20") {
              const n = parseHex(now.result)
              return n !== undefined && n > back ? { ...now, result: hex(n - back) } : now
            }
            return typeof now.result === "number" && now.result > Number(back)
              ? { ...now, result: now.result - Number(back) }
              : now
          }
        }
        const answer = await forward(path, body)
        if (dialect !== "BEP20" || fork === undefined || Date.now() >= branch.until) return answer
        // the devnet mines a block per transaction: the branch ends before it is deeper than three blocks
        // (deeper than the confirmations, the branch's deposits would be final on it: no indexer can undo that)
        const head = await forward("/", { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] })
        const n = isRecord(head) ? parseHex(head.result) : undefined
        if (n === undefined || n - branch.from > 3n) {
          branch.until = 0
          return answer
        }
        const invented = await inventedLogs(body)
        const forked = forkAnswer(body, answer)
        return invented.length > 0 && isRecord(forked) && Array.isArray(forked.result)
          ? { ...forked, result: [...forked.result, ...invented] }
          : forked
      }

      const server = http.createServer((req, res) => {
        onJsonRequest(req, (path, body) => {
          const httpFault = rate > 0 && random.next() < rate / 2 ? random.pick(HTTP_FAULTS) : undefined
          if (httpFault !== undefined) count(httpFault)
          if (httpFault === "drop") return void req.socket.destroy()
          if (httpFault === "timeout") {
            // accepted and never answered: the client's deadline must end it (closed with the proxy)
            held.add(res)
            return
          }
          if (httpFault === "rate_limit")
            return void res
              .writeHead(429, { "retry-after": "1", "content-type": "application/json" })
              .end(JSON.stringify({ error: "Too Many Requests" }))
          if (httpFault === "server_error")
            return void res
              .writeHead(random.next() < 0.5 ? 502 : 503, { "content-type": "text/html" })
              .end("<html><body>Bad Gateway</body></html>")
          if (httpFault === "malformed")
            return void res
              .writeHead(200, { "content-type": "application/json" })
              .end('{"jsonrpc":"2.0","result":<html>')
          const delay = httpFault === "latency" ? 200 + random.int(1_300) : 0
          const reply = new Promise((wait) => setTimeout(wait, delay)).then(() =>
            Array.isArray(body) ? Promise.all(body.map((one) => answerCall(path, one))) : answerCall(path, body)
          )
          reply.then(
            (result) => {
              const json = JSON.stringify(result)
              if (httpFault === "truncated")
                return void res
                  .writeHead(200, { "content-type": "application/json" })
                  .end(json.slice(0, Math.max(1, Math.floor(json.length / 2))))
              res.writeHead(200, { "content-type": "application/json" }).end(json)
            },
            (error: unknown) => res.writeHead(502).end(String(error))
          )
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${port}`,
            server,
            injected: () => new Map(counts),
            setRate: (next: number) => {
              rate = next
              if (next === 0) {
                branch.until = 0
                for (const res of held) res.destroy()
                held.clear()
              }
            }
          })
        )
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
