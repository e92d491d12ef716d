import { NodeRuntime } from "@effect/platform-node"
import { Effect, Either, Schema } from "effect"
import * as http from "node:http"
import { fileURLToPath } from "node:url"
import { serveOnLoopback } from "../src/devnet/loopback-server.js"
import { SyntheticAccounts } from "./catch-up-addresses.js"
import { SyntheticBscChain } from "./catch-up-bsc-chain.js"
import { SyntheticTronChain } from "./catch-up-tron-chain.js"

/**
 * A bench chain node: the TRON HTTP API (`/wallet/…`, `/walletsolidity/…`) and BNB Smart Chain JSON-RPC
 * (`POST /bsc`, batches included) for two synthetic chains of `head` blocks made on the fly, exactly the
 * calls our clients make while indexing. Every request waits `latencyMs` before it is answered, as a
 * remote provider's round trip would (requests in flight overlap: nothing is serialized). A call it does
 * not know is answered with an error and logged loudly, so a call the clients start making is noticed.
 * `/bench/paid` says what each chain paid to the watched addresses; `/bench/stats` counts the calls and
 * the CPU time the server spent (making blocks is part of what a run costs the machine).
 */
export interface ChainServerOptions {
  readonly head: number
  readonly watched: number
  readonly seed: number
  readonly latencyMs: number
  /** How far TRON's solidified block lags the head (0: every block is final, as the bench wants). */
  readonly solidLag: number
  readonly port?: number
}

const TronBody = Schema.Struct({ num: Schema.optional(Schema.Number) })
const JsonRpcCall = Schema.Struct({
  jsonrpc: Schema.optional(Schema.String),
  id: Schema.optional(Schema.Union(Schema.Number, Schema.String, Schema.Null)),
  method: Schema.String,
  params: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] })
})
type JsonRpcCall = typeof JsonRpcCall.Type
const JsonRpcRequest = Schema.parseJson(Schema.Union(JsonRpcCall, Schema.Array(Schema.Unknown)))
const BlockParams = Schema.Tuple(Schema.String, Schema.optionalElement(Schema.Boolean))
const ReceiptParams = Schema.Tuple(Schema.String)
const LogFilter = Schema.Tuple(
  Schema.Struct({
    address: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
    topics: Schema.optionalWith(Schema.Array(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(Schema.String)))), {
      default: () => []
    }),
    fromBlock: Schema.optionalWith(Schema.String, { default: () => "latest" }),
    toBlock: Schema.optionalWith(Schema.String, { default: () => "latest" }),
    blockHash: Schema.optional(Schema.String)
  })
)
const PaidQuery = Schema.Struct({
  chain: Schema.Literal("TRC20", "BEP20"),
  from: Schema.NumberFromString,
  to: Schema.NumberFromString
})

/** What BSC providers refuse (their wording: the client splits a range on it). */
const MAX_LOG_RANGE = 5_000
const MAX_LOG_RESULTS = 10_000

class RpcFailure {
  constructor(
    readonly code: number,
    readonly message: string
  ) {}
}

export const makeChainHandler = (options: ChainServerOptions) => {
  const tron = new SyntheticTronChain(
    options.seed,
    options.head,
    options.solidLag,
    new SyntheticAccounts("TRC20", options.watched)
  )
  const bsc = new SyntheticBscChain(options.seed, options.head, new SyntheticAccounts("BEP20", options.watched))
  const calls = new Map<string, number>()
  let httpRequests = 0
  let unknown = 0
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1)
  const loudly = (what: string) => {
    unknown += 1
    console.error(`chain-server: UNKNOWN ${what} — answered with an error; serve it if a client needs it`)
  }

  const tronCall = (path: string, text: string): { status: number; body: string } => {
    const parsed =
      text === "" ? Either.right({ num: undefined }) : Schema.decodeUnknownEither(Schema.parseJson(TronBody))(text)
    if (Either.isLeft(parsed)) return { status: 400, body: JSON.stringify({ Error: "invalid JSON body" }) }
    const num = parsed.right.num
    switch (path) {
      case "/wallet/getnowblock":
        return { status: 200, body: tron.block(tron.head) }
      case "/walletsolidity/getnowblock":
        return { status: 200, body: tron.block(tron.solid) }
      case "/wallet/getblockbynum":
        return { status: 200, body: num === undefined ? "{}" : tron.block(num) }
      case "/wallet/gettransactioninfobyblocknum":
        return { status: 200, body: num === undefined ? "[]" : tron.infos(num) }
      default:
        loudly(`TRON path ${path}`)
        return { status: 404, body: JSON.stringify({ Error: `no such endpoint ${path}` }) }
    }
  }

  const blockTag = (tag: string) => {
    if (tag === "latest" || tag === "safe" || tag === "finalized" || tag === "pending") return bsc.head
    if (tag === "earliest") return 0
    if (/^0x[0-9a-f]+$/i.test(tag)) return parseInt(tag, 16)
    throw new RpcFailure(-32602, `invalid block tag ${tag}`)
  }
  const decodeParams = <A, I>(schema: Schema.Schema<A, I>, params: ReadonlyArray<unknown>): A => {
    const decoded = Schema.decodeUnknownEither(schema)(params)
    if (Either.isLeft(decoded)) throw new RpcFailure(-32602, "invalid params")
    return decoded.right
  }

  const getLogs = (params: ReadonlyArray<unknown>) => {
    const [filter] = decodeParams(LogFilter, params)
    const addresses =
      filter.address === undefined
        ? undefined
        : new Set((typeof filter.address === "string" ? [filter.address] : filter.address).map((a) => a.toLowerCase()))
    const topics = filter.topics.map((t) =>
      t === null ? undefined : new Set((typeof t === "string" ? [t] : t).map((x) => x.toLowerCase()))
    )
    if (filter.blockHash !== undefined) {
      loudly("eth_getLogs by blockHash")
      throw new RpcFailure(-32602, "eth_getLogs by blockHash is not served by the bench chain")
    }
    const from = blockTag(filter.fromBlock)
    const to = Math.min(blockTag(filter.toBlock), bsc.head)
    if (to - from + 1 > MAX_LOG_RANGE) throw new RpcFailure(-32005, `exceed maximum block range: ${MAX_LOG_RANGE}`)
    const found: Array<string> = []
    for (let n = from; n <= to; n++) {
      for (const log of bsc.logs(n)) {
        if (addresses !== undefined && !addresses.has(log.address)) continue
        if (!topics.every((wanted, i) => wanted === undefined || wanted.has(log.topics[i] ?? ""))) continue
        found.push(log.json)
        if (found.length > MAX_LOG_RESULTS)
          throw new RpcFailure(-32005, `query returned more than ${MAX_LOG_RESULTS} results`)
      }
    }
    return `[${found.join(",")}]`
  }

  /** One JSON-RPC call's result as JSON text. */
  const rpcResult = (call: JsonRpcCall): string => {
    switch (call.method) {
      case "eth_blockNumber":
        return `"0x${bsc.head.toString(16)}"`
      case "eth_chainId":
        return `"0x38"`
      case "eth_getBlockByNumber": {
        const [tag, full] = decodeParams(BlockParams, call.params)
        return bsc.block(blockTag(tag), full === true)
      }
      case "eth_getLogs":
        return getLogs(call.params)
      case "eth_getTransactionReceipt":
        return bsc.receipt(decodeParams(ReceiptParams, call.params)[0])
      default:
        loudly(`JSON-RPC method ${call.method}`)
        throw new RpcFailure(-32601, `the method ${call.method} does not exist/is not available`)
    }
  }

  const rpcAnswer = (raw: unknown): string => {
    const call = Schema.decodeUnknownEither(JsonRpcCall)(raw)
    if (Either.isLeft(call)) return `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`
    const id = JSON.stringify(call.right.id ?? null)
    count(call.right.method)
    try {
      return `{"jsonrpc":"2.0","id":${id},"result":${rpcResult(call.right)}}`
    } catch (error) {
      if (!(error instanceof RpcFailure)) throw error
      return `{"jsonrpc":"2.0","id":${id},"error":{"code":${error.code},"message":${JSON.stringify(error.message)}}}`
    }
  }

  const bscCall = (text: string): { status: number; body: string } => {
    const request = Schema.decodeUnknownEither(JsonRpcRequest)(text)
    if (Either.isLeft(request))
      return { status: 200, body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}` }
    if (!Array.isArray(request.right)) return { status: 200, body: rpcAnswer(request.right) }
    count("(batch)")
    if (request.right.length === 0)
      return { status: 200, body: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"empty batch"}}` }
    return { status: 200, body: `[${request.right.map(rpcAnswer).join(",")}]` }
  }

  const benchCall = (url: URL): { status: number; body: string } => {
    if (url.pathname === "/bench/stats") {
      const cpu = process.cpuUsage()
      return {
        status: 200,
        body: JSON.stringify({
          httpRequests,
          unknown,
          cpuMs: (cpu.user + cpu.system) / 1000,
          calls: Object.fromEntries(calls)
        })
      }
    }
    if (url.pathname === "/bench/paid") {
      const query = Schema.decodeUnknownEither(PaidQuery)(Object.fromEntries(url.searchParams))
      if (Either.isLeft(query)) return { status: 400, body: JSON.stringify({ Error: "chain=TRC20|BEP20&from=N&to=M" }) }
      const chain = query.right.chain === "TRC20" ? tron : bsc
      return { status: 200, body: JSON.stringify(chain.paid(query.right.from, query.right.to).encoded()) }
    }
    loudly(`bench path ${url.pathname}`)
    return { status: 404, body: JSON.stringify({ Error: `no such endpoint ${url.pathname}` }) }
  }

  const answer = (method: string, rawUrl: string, text: string): { status: number; body: string } => {
    httpRequests += 1
    const url = new URL(rawUrl, "http://chain-server")
    if (url.pathname === "/bsc" && method === "POST") return bscCall(text)
    if (url.pathname.startsWith("/bench/")) return benchCall(url)
    count(url.pathname)
    return tronCall(url.pathname, text)
  }

  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const respond = () => {
        const { status, body } = answer(req.method ?? "GET", req.url ?? "/", Buffer.concat(chunks).toString("utf8"))
        res.writeHead(status, { "content-type": "application/json" }).end(body)
      }
      // the provider's round trip: each request waits on its own timer, so requests in flight overlap
      if (options.latencyMs > 0) setTimeout(respond, options.latencyMs)
      else respond()
    })
  }
}

/** Serves both synthetic chains on 127.0.0.1 until the scope closes; returns the base URL. */
export const serveChains = (options: ChainServerOptions) =>
  Effect.gen(function* () {
    const server = http.createServer(makeChainHandler(options))
    server.keepAliveTimeout = 60_000
    return yield* serveOnLoopback(server, "bench chain server", options.port)
  })

const CliOptions = Schema.Struct({
  head: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.positive()), { default: () => 100_000 }),
  watched: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()), {
    default: () => 2_000
  }),
  seed: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int()), { default: () => 1 }),
  latency: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.nonNegative()), { default: () => 30 }),
  solidLag: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()), { default: () => 0 }),
  port: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()), { default: () => 0 }),
  dieWithParent: Schema.optionalWith(Schema.BooleanFromString, { default: () => false })
})

/**
 * `--head N --watched W --seed S --latency MS --solid-lag L --port P`; prints `{"url": …}` once listening.
 * `--die-with-parent true`: exits when its stdin closes (the bench's end, even a killed bench).
 */
const main = Effect.gen(function* () {
  const args = process.argv.slice(2)
  const named: Record<string, string> = {}
  for (let i = 0; i < args.length; i += 2)
    named[(args[i] ?? "").replace(/^--/, "").replace(/-(\w)/g, (_, c: string) => c.toUpperCase())] = args[i + 1] ?? ""
  const cli = yield* Schema.decodeUnknown(CliOptions)(named)
  const url = yield* serveChains({
    head: cli.head,
    watched: cli.watched,
    seed: cli.seed,
    latencyMs: cli.latency,
    solidLag: cli.solidLag,
    port: cli.port
  })
  if (cli.dieWithParent) {
    process.stdin.resume()
    process.stdin.once("close", () => process.exit(0))
  }
  console.log(JSON.stringify({ url, tron: url, bsc: `${url}/bsc` }))
  yield* Effect.never
}).pipe(Effect.scoped)

if (process.argv[1] === fileURLToPath(import.meta.url)) NodeRuntime.runMain(main)
