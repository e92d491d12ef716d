import { Effect, Option, Schedule, Schema } from "effect"
import {
  type Address,
  BaseError,
  BlockNotFoundError,
  createPublicClient,
  encodeFunctionData,
  type Hex,
  hexToBytes,
  http,
  HttpRequestError,
  keccak256,
  rpcSchema,
  serializeTransaction,
  toHex,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type TransactionSerializableLegacy
} from "viem"
import { isHexAddress } from "../../keys/address-encoding.js"
import { Signer } from "../../keys/signer.js"
import { makeBudgetedFetch, type NodeBudget, throttleCheck, UNLIMITED } from "../node-budget.js"
import type { NodeHeaders } from "../node-headers.js"
import { evmSendAnswer } from "./evm-send-answer.js"
import {
  type ChainBlock,
  type ChainClient,
  ChainRpcError,
  checkFeeCap,
  LandingEvidence,
  type LandingWindow,
  type SignedTransfer,
  TransferRejected,
  type TransferRequest
} from "../chain-client.js"
import {
  blockHeader,
  bloomMayContain,
  type CallFrame,
  CallFrameSchema,
  CallTracerBlock,
  decodeInternalTransfers,
  decodeNativeTransfers,
  decodeTransferLogs,
  ParityBlock,
  parityToFrames,
  type RawLog,
  TRANSFER_TOPIC
} from "./evm-decoding.js"

export interface Bep20Settings {
  readonly rpcUrl: string
  readonly chainId: number
  /** currency → token contract */
  readonly tokens: ReadonlyMap<string, Address>
  /** Blocks after which a transfer counts as final. */
  readonly confirmations: number
  /** Largest block range asked of eth_getLogs at once; halved when a provider refuses a range. */
  readonly maxLogRange?: bigint
  /**
   * How BNB sent by contracts (internal calls) is seen: `callTracer` (debug_traceBlockByNumber),
   * `parity` (trace_block), or `off` (only a transaction's own value is seen).
   */
  readonly traces?: "callTracer" | "parity" | "off"
  /**
   * `finalized`: a block is final at the lower of the node's `finalized` block (BSC's fast finality) and
   * `confirmations` deep; `depth` (default, and the devnet's: anvil has no fast finality): by depth alone.
   */
  readonly finality?: "finalized" | "depth"
  /** Headers sent with every call (a provider's API key). */
  readonly headers?: NodeHeaders
  /** Calls a second and at once the node takes (its provider's limits); none unless set. */
  readonly budget?: NodeBudget
  /**
   * Calls in flight at once for one block range (bodies, receipts; 64 unless set). viem sends the calls
   * made together as one JSON-RPC batch, so a range costs a few round trips, not one per block or receipt.
   */
  readonly concurrency?: number
}

/** The trace methods and block receipts, typed for viem (they are not in its default schema). */
type ExtraSchema = [
  { Method: "debug_traceBlockByNumber"; Parameters: [Hex, { tracer: "callTracer" }]; ReturnType: unknown },
  { Method: "trace_block"; Parameters: [Hex]; ReturnType: unknown },
  { Method: "eth_getBlockReceipts"; Parameters: [Hex]; ReturnType: unknown }
]

/** A receipt's logs, as `eth_getBlockReceipts` and `eth_getTransactionReceipt` give them. */
const ReceiptLogs = Schema.Struct({
  transactionHash: Schema.String,
  blockHash: Schema.String,
  logs: Schema.Array(
    Schema.Struct({
      address: Schema.String,
      topics: Schema.Array(Schema.String),
      data: Schema.String,
      blockNumber: Schema.String,
      blockHash: Schema.String,
      transactionHash: Schema.String,
      logIndex: Schema.String
    })
  )
})

const NATIVE = "BNB"
/** Gas budgeted for a BEP20 `transfer` when it cannot be estimated (a new holder's costs about 52k). */
const TOKEN_TRANSFER_GAS_BUDGET = 65_000n
const transferAbi = [
  {
    type: "function",
    name: "transfer",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" }
    ],
    outputs: [{ type: "bool" }]
  }
] as const
const balanceOfAbi = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }],
    outputs: [{ type: "uint256" }]
  }
] as const

const rpcError = (what: string) => (cause: unknown) =>
  new ChainRpcError({
    chain: "BEP20",
    message: `${what}: ${cause instanceof Error ? ("shortMessage" in cause && typeof cause.shortMessage === "string" ? cause.shortMessage : cause.message) : String(cause)}`
  })

const isTxHash = (value: string): value is Hex => /^0x[0-9a-fA-F]{64}$/.test(value)

/**
 * A node saying the state needed to trace a block is gone (pruned: a full node keeps it for its newest ~128
 * blocks): anvil and reth "Resource not found", geth "required historical state unavailable" / "missing
 * trie node", Erigon "state … pruned". Not a failure to answer, which may pass.
 */
const stateGone = (message: string) => /resource not found|missing trie node|historical state|pruned/i.test(message)

/** A block traced only in part (or not at all) because its state is gone; carried through the retries. */
class StateGone extends Schema.TaggedError<StateGone>()("StateGone", {
  partial: Schema.Struct({
    frames: Schema.Array(Schema.Struct({ txHash: Schema.String, result: CallFrameSchema })),
    untraced: Schema.UndefinedOr(Schema.String)
  })
}) {}

/** What the provider itself said of a failed call (viem's own summary, e.g. "Request exceeds defined limit.", left out). */
const providerWords = (cause: unknown) =>
  cause instanceof BaseError ? cause.details : cause instanceof Error ? cause.message : String(cause)

/** A provider's rate limit or quota (HTTP 429, or its words): waited out, never answered by splitting the range. */
export const isRateLimited = (cause: unknown) =>
  (cause instanceof BaseError && cause.walk((e) => e instanceof HttpRequestError && e.status === 429) !== null) ||
  /rate.?limit|too many requests|request (count|rate)|exceeded .*(quota|capacity|credits|requests)|throttl/i.test(
    providerWords(cause)
  )

/**
 * A provider refusing a log query as too large, in its own words: Infura "query returned more than 10000
 * results", Alchemy "Log response size exceeded", QuickNode "limited to a 10,000 range", BNB Chain "exceed
 * maximum block range: 5000", Ankr "block range is too wide", Erigon "requested too many blocks".
 */
export const isRangeRefusal = (cause: unknown) =>
  !isRateLimited(cause) &&
  /block range|range (is )?too (large|wide|big)|max(imum)? (block )?range|more than [\d,]+ (results|logs|blocks)|response size|too many (results|logs|blocks)|limited to (a )?[\d,]+|range limit/i.test(
    providerWords(cause)
  )

/**
 * BEP20 over JSON-RPC with viem: token Transfer logs by block range (split when refused, batched
 * requests), native transfers from block bodies with their receipts, balances, signed transfers through
 * the Signer. The block-number cache is off (cacheTime 0) and the raw-transaction send never retries:
 * a retried send could broadcast twice, so an ambiguous send is settled by looking the hash up instead.
 */
export const makeBep20Client = (settings: Bep20Settings) =>
  Effect.gen(function* () {
    const signer = yield* Signer
    // calls made together go as JSON-RPC batches of at most 16: a batch of full blocks must stay under
    // viem's (and providers') 10 MB answer limit even with several ranges in flight
    const budget = settings.budget ?? UNLIMITED
    const budgeted = makeBudgetedFetch(budget)
    const headers = settings.headers === undefined ? {} : { fetchOptions: { headers: { ...settings.headers } } }
    const client = createPublicClient({
      transport: http(settings.rpcUrl, {
        batch: { batchSize: 16 },
        retryCount: 3,
        fetchFn: budgeted.fetch,
        ...headers
      }),
      cacheTime: 0
    })
    // a send goes once, 429 or not (budgeted.send): a re-send answered "nonce too low" would read as a refusal
    const sender = createPublicClient({
      transport: http(settings.rpcUrl, { retryCount: 0, fetchFn: budgeted.send, ...headers }),
      cacheTime: 0
    })
    const tracer = createPublicClient({
      transport: http(settings.rpcUrl, { retryCount: 3, fetchFn: budgeted.fetch, ...headers }),
      cacheTime: 0,
      rpcSchema: rpcSchema<ExtraSchema>()
    })
    const traces = settings.traces ?? "off"
    const contracts = [...settings.tokens.values()]
    const currencyOf = new Map([...settings.tokens].map(([currency, address]) => [address.toLowerCase(), currency]))
    const maxRange = settings.maxLogRange ?? 2_000n
    const concurrency = settings.concurrency ?? 64
    const finality = settings.finality ?? "depth"

    const head = Effect.tryPromise({
      try: () => client.getBlockNumber({ cacheTime: 0 }),
      catch: rpcError("eth_blockNumber")
    })
    const genesis = Effect.tryPromise({
      try: () => client.getBlock({ blockNumber: 0n }),
      catch: rpcError("eth_getBlockByNumber")
    }).pipe(Effect.map((block) => block.hash))

    const getLogs = (from: bigint, to: bigint): Effect.Effect<ReadonlyArray<RawLog>, ChainRpcError> =>
      contracts.length === 0
        ? Effect.succeed([])
        : Effect.tryPromise({
            try: () =>
              client.request({
                method: "eth_getLogs",
                params: [{ address: contracts, topics: [TRANSFER_TOPIC], fromBlock: toHex(from), toBlock: toHex(to) }]
              }),
            catch: (cause) => cause
          }).pipe(
            Effect.map((logs) =>
              logs.flatMap((l) =>
                l.blockHash === null || l.transactionHash === null || l.logIndex === null || l.blockNumber === null
                  ? []
                  : [
                      {
                        address: l.address,
                        topics: l.topics,
                        data: l.data,
                        blockNumber: l.blockNumber,
                        blockHash: l.blockHash,
                        transactionHash: l.transactionHash,
                        logIndex: l.logIndex
                      }
                    ]
              )
            ),
            Effect.catchAll((cause) => {
              if (to > from && isRangeRefusal(cause)) {
                const mid = from + (to - from) / 2n
                return Effect.map(
                  Effect.all([getLogs(from, mid), getLogs(mid + 1n, to)], { concurrency: 2 }),
                  ([a, b]) => [...a, ...b]
                )
              }
              return Effect.fail(rpcError("eth_getLogs")(cause))
            })
          )

    /** The call trees of a block's transactions, in block order, by the configured tracer. */
    const traceOnce = (body: {
      readonly number: bigint | null
      readonly transactions: ReadonlyArray<{ readonly hash: string }>
    }) =>
      Effect.gen(function* () {
        const number = toHex(body.number ?? 0n)
        if (traces === "parity") {
          const raw = yield* Effect.tryPromise({
            try: () => tracer.request({ method: "trace_block", params: [number] }),
            catch: rpcError(`trace_block ${body.number}`)
          })
          return {
            frames: parityToFrames(
              yield* Schema.decodeUnknown(ParityBlock)(raw).pipe(Effect.mapError(rpcError("trace_block")))
            ),
            untraced: undefined
          }
        }
        const raw = yield* Effect.tryPromise({
          try: () => tracer.request({ method: "debug_traceBlockByNumber", params: [number, { tracer: "callTracer" }] }),
          catch: rpcError(`debug_traceBlockByNumber ${body.number}`)
        })
        const results = yield* Schema.decodeUnknown(CallTracerBlock)(raw).pipe(
          Effect.mapError(rpcError("debug_traceBlockByNumber"))
        )
        if (results.length !== body.transactions.length) {
          return yield* new ChainRpcError({
            chain: "BEP20",
            message: `block ${body.number}: ${results.length} traces for ${body.transactions.length} transactions; read it again`
          })
        }
        // a transaction the node could not trace hides what its contracts sent. Its state pruned (a full
        // node traces only its newest blocks): the block is read without it, and says so (`untraced`);
        // any other failure: the block is not read past (another node may trace it; this one is asked again)
        const frames: Array<{ readonly txHash: string; readonly result: CallFrame }> = []
        const gone: Array<string> = []
        for (const [i, r] of results.entries()) {
          const txHash = r.txHash ?? body.transactions[i]?.hash ?? ""
          if ("error" in r) {
            if (!stateGone(r.error)) {
              return yield* new ChainRpcError({
                chain: "BEP20",
                message: `block ${body.number}: the node could not trace transaction ${txHash} (${r.error}); the BNB its contracts sent cannot be seen, so the block is not read past`
              })
            }
            gone.push(`${txHash} (${r.error})`)
            continue
          }
          frames.push({ txHash, result: r.result })
        }
        return {
          frames,
          untraced:
            gone.length === 0
              ? undefined
              : `${gone.length} of ${results.length} transactions could not be traced: ${gone.slice(0, 3).join(", ")}${gone.length > 3 ? ", …" : ""}`
        }
      })

    /**
     * The traces of a block; asked up to three times when the node answers that its state is gone (one URL
     * may have an archive node behind it too), then read without them (`untraced`), never retried for ever.
     */
    const traceBlock = (body: {
      readonly number: bigint | null
      readonly transactions: ReadonlyArray<{ readonly hash: string }>
    }) =>
      traceOnce(body).pipe(
        Effect.flatMap((traced) =>
          traced.untraced === undefined ? Effect.succeed(traced) : Effect.fail(new StateGone({ partial: traced }))
        ),
        Effect.catchTag(
          "ChainRpcError",
          (error): Effect.Effect<never, ChainRpcError | StateGone> =>
            stateGone(error.message)
              ? Effect.fail(
                  new StateGone({
                    partial: { frames: [], untraced: `the node could not trace the block: ${error.message}` }
                  })
                )
              : Effect.fail(error)
        ),
        Effect.retry({ while: (e) => e._tag === "StateGone", times: 2, schedule: Schedule.spaced("200 millis") }),
        Effect.catchTag("StateGone", (gone) => Effect.succeed(gone.partial))
      )

    /**
     * The watched tokens' Transfer logs of a block as its receipts hold them, asked of the node that served
     * its body (by the body's hash: a node without the block cannot answer). The proof for a block whose
     * bloom matched but for which `eth_getLogs` gave nothing: a bloom cannot say the topic and the token came
     * from one log (the token's own Approval, another token's Transfer), and a log index behind its node
     * answers [] for blocks it has not reached; the receipts tell the two apart.
     */
    const receiptLogs = (body: {
      readonly number: bigint | null
      readonly hash: Hex | null
      readonly transactions: ReadonlyArray<{ readonly hash: Hex }>
    }) =>
      Effect.gen(function* () {
        const hash = body.hash ?? "0x"
        const asked = yield* Effect.tryPromise({
          try: () => tracer.request({ method: "eth_getBlockReceipts", params: [hash] }),
          catch: (cause) => cause
        }).pipe(
          Effect.flatMap((raw) => Schema.decodeUnknown(Schema.NullOr(Schema.Array(ReceiptLogs)))(raw)),
          Effect.map(Option.some),
          // a node without eth_getBlockReceipts: each transaction's receipt (viem batches them)
          Effect.catchIf(
            (cause) =>
              cause instanceof Error &&
              /method not found|not supported|does not exist|not available|-32601/i.test(cause.message),
            () => Effect.succeedNone
          ),
          Effect.mapError(rpcError(`eth_getBlockReceipts ${body.number}`))
        )
        const receipts = Option.isSome(asked)
          ? asked.value
          : yield* Effect.forEach(
              body.transactions,
              (tx) =>
                Effect.tryPromise({
                  try: () => tracer.request({ method: "eth_getTransactionReceipt", params: [tx.hash] }),
                  catch: rpcError("eth_getTransactionReceipt")
                }).pipe(
                  Effect.flatMap((raw) =>
                    Schema.decodeUnknown(ReceiptLogs)(raw).pipe(
                      Effect.mapError(
                        () =>
                          new ChainRpcError({
                            chain: "BEP20",
                            message: `block ${body.number}: no receipt for ${tx.hash} yet; read it again`
                          })
                      )
                    )
                  )
                ),
              { concurrency }
            )
        if (
          receipts === null ||
          receipts.length !== body.transactions.length ||
          receipts.some((r) => r.blockHash.toLowerCase() !== hash.toLowerCase())
        ) {
          return yield* new ChainRpcError({
            chain: "BEP20",
            message: `block ${body.number}: its bloom shows token Transfer logs, eth_getLogs gave none and its receipts are not all there; read it again`
          })
        }
        return receipts
          .flatMap((r) => r.logs)
          .filter((l) => l.topics[0]?.toLowerCase() === TRANSFER_TOPIC && currencyOf.has(l.address.toLowerCase()))
      })

    const fetchBlock = (number: bigint) =>
      Effect.tryPromise({
        try: () => client.getBlock({ blockNumber: number, includeTransactions: true }),
        catch: rpcError(`eth_getBlockByNumber ${number}`)
      })

    const blocks = (from: bigint, to: bigint): Effect.Effect<ReadonlyArray<ChainBlock>, ChainRpcError> =>
      Effect.gen(function* () {
        if (to < from) return []
        const ranges: Array<[bigint, bigint]> = []
        for (let start = from; start <= to; start += maxRange)
          ranges.push([start, start + maxRange - 1n < to ? start + maxRange - 1n : to])
        const numbers: Array<bigint> = []
        for (let n = from; n <= to; n++) numbers.push(n)
        // the logs and the bodies at once: neither needs the other to be asked
        const [logs, bodies] = yield* Effect.all(
          [
            Effect.map(
              Effect.forEach(ranges, ([a, b]) => getLogs(a, b), { concurrency: 4 }),
              (parts) => parts.flat()
            ),
            Effect.forEach(numbers, fetchBlock, { concurrency })
          ],
          { concurrency: 2 }
        )
        const hashes = new Map<string, string>(bodies.map((b) => [b.hash ?? "", b.parentHash]))
        // the logs and the bodies must come from the same branch; a reorg in between is retried by the caller
        for (const log of logs) {
          if (!hashes.has(log.blockHash)) {
            return yield* new ChainRpcError({
              chain: "BEP20",
              message: `block ${log.blockNumber} changed while it was read (reorg); read it again`
            })
          }
        }
        // and the logs must be there: a log index behind its node answers [] for a block it has not reached,
        // so a body whose bloom may hold one of our tokens' Transfers and got no log is settled by its
        // receipts (a bloom's false positive, or the logs the index left out)
        const logged = new Set(logs.map((l) => l.blockHash))
        const unproven = bodies.filter(
          (body) =>
            !logged.has(body.hash ?? "") &&
            bloomMayContain(body.logsBloom ?? "0x", TRANSFER_TOPIC) &&
            contracts.some((c) => bloomMayContain(body.logsBloom ?? "0x", c))
        )
        const fromReceipts = (yield* Effect.forEach(unproven, receiptLogs, { concurrency: 8 })).flat()
        const valueTxs = bodies.flatMap((b) => b.transactions.filter((t) => t.to !== null && t.value > 0n))
        const receipts = yield* Effect.forEach(
          valueTxs,
          (tx) =>
            Effect.tryPromise({
              try: () => client.getTransactionReceipt({ hash: tx.hash }),
              catch: rpcError("eth_getTransactionReceipt")
            }),
          { concurrency }
        )
        const succeeded = new Set<string>(receipts.filter((r) => r.status === "success").map((r) => r.transactionHash))
        const tokenTransfers = decodeTransferLogs(
          [...logs, ...fromReceipts],
          (c) => currencyOf.get(c),
          (hash) => hashes.get(hash) ?? ""
        )
        const traced =
          traces === "off"
            ? bodies.map(() => ({ frames: [], untraced: undefined }))
            : yield* Effect.forEach(bodies, traceBlock, { concurrency: 8 })
        return bodies.map((body, position) => {
          const raw = {
            number: body.number ?? 0n,
            hash: body.hash ?? "",
            parentHash: body.parentHash,
            timestamp: body.timestamp,
            transactions: body.transactions.map((t) => ({ hash: t.hash, from: t.from, to: t.to, value: t.value }))
          }
          const trees = traced[position]
          const native = [
            ...decodeNativeTransfers(raw, NATIVE, (hash) => succeeded.has(hash)),
            ...decodeInternalTransfers(raw, NATIVE, trees?.frames ?? [])
          ]
          const tokens = tokenTransfers.filter((t) => t.blockHash === raw.hash)
          return {
            ...blockHeader(raw),
            transfers: [...native, ...tokens],
            ...(trees?.untraced === undefined ? {} : { untraced: trees.untraced })
          }
        })
      })

    /** At `blockNumber` when given, else at the head. */
    const balanceAt = (address: string, currency: string, blockNumber?: bigint) =>
      Effect.gen(function* () {
        if (!isHexAddress(address))
          return yield* new ChainRpcError({ chain: "BEP20", message: `not an address: ${address}` })
        const at = blockNumber === undefined ? {} : { blockNumber }
        if (currency === NATIVE) {
          return yield* Effect.tryPromise({
            try: () => client.getBalance({ address, ...at }),
            catch: rpcError("eth_getBalance")
          })
        }
        const token = settings.tokens.get(currency)
        if (token === undefined)
          return yield* new ChainRpcError({ chain: "BEP20", message: `no contract configured for ${currency}` })
        return yield* Effect.tryPromise({
          try: () =>
            client.readContract({
              address: token,
              abi: balanceOfAbi,
              functionName: "balanceOf",
              args: [address],
              ...at
            }),
          catch: rpcError("balanceOf")
        })
      })
    const balance = (address: string, currency: string) => balanceAt(address, currency)
    const finalBalance = (address: string, currency: string) =>
      Effect.flatMap(finalized, (height) =>
        Effect.map(balanceAt(address, currency, height), (value) => ({ balance: value, height }))
      )

    const gasPrice = Effect.tryPromise({ try: () => client.getGasPrice(), catch: rpcError("eth_gasPrice") })

    /** The call a transfer makes: value to the recipient, or the token's `transfer`. */
    const callOf = (
      to: Address,
      currency: string,
      amount: bigint
    ): Effect.Effect<{ to: Address; value: bigint; data?: Hex }, TransferRejected> => {
      if (currency === NATIVE) return Effect.succeed({ to, value: amount })
      const token = settings.tokens.get(currency)
      if (token === undefined)
        return Effect.fail(new TransferRejected({ chain: "BEP20", message: `no contract configured for ${currency}` }))
      return Effect.succeed({
        to: token,
        value: 0n,
        data: encodeFunctionData({ abi: transferAbi, functionName: "transfer", args: [to, amount] })
      })
    }

    const prepare = (request: TransferRequest) =>
      Effect.gen(function* () {
        if (request.from.family !== "EVM")
          return yield* new TransferRejected({ chain: "BEP20", message: "BEP20 transfers need an EVM key" })
        if (request.action !== undefined)
          return yield* new TransferRejected({
            chain: "BEP20",
            message: `${request.action._tag} is not a BEP20 transaction`
          })
        if (!isHexAddress(request.to))
          return yield* new TransferRejected({ chain: "BEP20", message: `not an address: ${request.to}` })
        const [key] = yield* signer.deriveAddresses("EVM", request.from.account, [request.from.index])
        const from = key?.address
        if (from === undefined || !isHexAddress(from))
          return yield* Effect.die(new Error("the signer derived no address"))
        const call = yield* callOf(request.to, request.currency, request.amount)
        const [nonce, quoted] = yield* Effect.all([
          request.nonce === undefined
            ? Effect.tryPromise({
                try: () => client.getTransactionCount({ address: from, blockTag: "pending" }),
                catch: rpcError("eth_getTransactionCount")
              }).pipe(Effect.map(BigInt))
            : Effect.succeed(request.nonce),
          gasPrice
        ])
        const price =
          request.gasPriceAtLeast !== undefined && request.gasPriceAtLeast > quoted ? request.gasPriceAtLeast : quoted
        // a transfer that would revert (no balance, no gas) is refused here, before anything is signed
        const gas = yield* Effect.tryPromise({
          try: () => client.estimateGas({ account: from, gasPrice: price, ...call }),
          catch: (cause) =>
            new TransferRejected({ chain: "BEP20", message: rpcError("eth_estimateGas")(cause).message })
        })
        yield* checkFeeCap("BEP20", request.feeCap, gas * price, price)
        const unsigned: TransactionSerializableLegacy = {
          type: "legacy",
          chainId: settings.chainId,
          nonce: Number(nonce),
          gasPrice: price,
          gas,
          ...call
        }
        const digest = keccak256(serializeTransaction(unsigned))
        const signature = yield* signer.signDigest(request.from, hexToBytes(digest))
        const signed = serializeTransaction(unsigned, {
          r: toHex(signature.subarray(0, 32)),
          s: toHex(signature.subarray(32, 64)),
          // legacy form: v = 27 + recovery id; viem turns it into EIP-155's chainId * 2 + 35 + recovery id
          v: 27n + BigInt(signature[64] ?? 0)
        })
        return {
          txHash: keccak256(signed),
          raw: signed,
          from,
          feePayer: from,
          nonce: Option.some(nonce),
          validUntil: Option.none(),
          maxFee: gas * price,
          gasPrice: price
        } satisfies SignedTransfer
      })

    const broadcast = (raw: string): Effect.Effect<void, ChainRpcError | TransferRejected> =>
      Effect.gen(function* () {
        if (!/^0x[0-9a-fA-F]+$/.test(raw))
          return yield* new TransferRejected({ chain: "BEP20", message: "signed bytes must be 0x hex" })
        const serializedTransaction: Hex = `0x${raw.slice(2)}`
        yield* Effect.tryPromise({
          try: () => sender.sendRawTransaction({ serializedTransaction }),
          catch: (cause) => cause
        }).pipe(
          Effect.catchAll((cause): Effect.Effect<void, ChainRpcError | TransferRejected> => {
            const answer = evmSendAnswer(cause)
            // the node has it already (an earlier send whose answer was lost): the same bytes, so success
            if (answer._tag === "known") return Effect.void
            if (answer._tag === "refused")
              return Effect.fail(new TransferRejected({ chain: "BEP20", message: answer.message }))
            return Effect.fail(
              new ChainRpcError({ chain: "BEP20", message: `eth_sendRawTransaction: ${answer.message}` })
            )
          })
        )
      })

    const finalNonce = (address: string) =>
      Effect.gen(function* () {
        if (!isHexAddress(address))
          return yield* new ChainRpcError({ chain: "BEP20", message: `not an address: ${address}` })
        const height = yield* finalized
        return BigInt(
          yield* Effect.tryPromise({
            try: () => client.getTransactionCount({ address, blockNumber: height }),
            catch: rpcError("eth_getTransactionCount")
          })
        )
      })

    // a transaction of the sender with this nonce is final: it may be this one (a lookup that missed it is no
    // proof it is not), or another of custody's with the same nonce; which one is for custody to find
    const landing = (window: LandingWindow) =>
      Option.match(window.nonce, {
        onNone: () => Effect.succeed(LandingEvidence.Open()),
        onSome: (nonce) =>
          Effect.map(finalNonce(window.from), (used) =>
            used > nonce ? LandingEvidence.NonceUsed() : LandingEvidence.Open()
          )
      })

    const feeEstimate = (request: {
      readonly from: string
      readonly to: string
      readonly currency: string
      readonly amount: bigint
    }) =>
      Effect.gen(function* () {
        if (!isHexAddress(request.from) || !isHexAddress(request.to))
          return yield* new ChainRpcError({ chain: "BEP20", message: "not an address" })
        const call = yield* callOf(request.to, request.currency, request.amount).pipe(
          Effect.mapError((e) => new ChainRpcError({ chain: "BEP20", message: e.message }))
        )
        const from = request.from
        const [gas, price] = yield* Effect.all([
          Effect.tryPromise({
            try: () => client.estimateGas({ account: from, ...call }),
            catch: rpcError("eth_estimateGas")
          }).pipe(
            // a token transfer the sender cannot make yet (a quote before the main wallet holds the tokens)
            // reverts in estimation: budget a typical BEP20 transfer instead, at today's gas price
            Effect.catchAll((error) =>
              request.currency === NATIVE ? Effect.fail(error) : Effect.succeed(TOKEN_TRANSFER_GAS_BUDGET)
            )
          ),
          gasPrice
        ])
        return gas * price
      })

    const transaction = (txHash: string) =>
      Effect.gen(function* () {
        if (!isTxHash(txHash)) return Option.none()
        const hash = txHash
        // "not found" is an answer; any other failure is the node's, and must not read as "no such
        // transaction" (custody would take it for a dead one and sign another)
        const receipt = yield* Effect.tryPromise({
          try: () =>
            client.getTransactionReceipt({ hash }).then(Option.some, (error: unknown) => {
              if (error instanceof TransactionReceiptNotFoundError) return Option.none()
              throw error
            }),
          catch: rpcError("eth_getTransactionReceipt")
        })
        const tip = yield* head
        if (Option.isSome(receipt)) {
          return Option.some({
            status: receipt.value.status === "success" ? ("success" as const) : ("failed" as const),
            blockNumber: Option.some(receipt.value.blockNumber),
            confirmations: Number(tip - receipt.value.blockNumber + 1n),
            fee: Option.some(receipt.value.gasUsed * receipt.value.effectiveGasPrice)
          })
        }
        const pending = yield* Effect.tryPromise({
          try: () =>
            client.getTransaction({ hash }).then(Option.some, (error: unknown) => {
              if (error instanceof TransactionNotFoundError) return Option.none()
              throw error
            }),
          catch: rpcError("eth_getTransactionByHash")
        })
        return Option.map(pending, () => ({
          status: "pending" as const,
          blockNumber: Option.none<bigint>(),
          confirmations: 0,
          fee: Option.none<bigint>()
        }))
      })

    const finalAt = (h: bigint) => (h > BigInt(settings.confirmations) ? h - BigInt(settings.confirmations) : 0n)
    /**
     * BSC's fast finality: the node's `finalized` block. A block is final only when both say so: the node's
     * finalized block has reached it, and it is the configured depth deep (a stalled fast finality, BNB's
     * docs: about 11–15 validator turns of 8 or 16 blocks, makes confirmations wait for it). A node that
     * does not serve the tag: the depth alone.
     */
    const finalizedTag = Effect.tryPromise({
      try: () => client.getBlock({ blockTag: "finalized" }),
      catch: (cause) => cause
    }).pipe(
      Effect.flatMap((block) =>
        block.number === null
          ? Effect.fail(new ChainRpcError({ chain: "BEP20", message: "the node's finalized block has no number" }))
          : Effect.succeedSome(block.number)
      ),
      // only a node that does not serve the tag is read by depth alone; any other failure (a rate limit, a
      // timeout) fails the read: a flaky node must not turn the stricter rule off
      Effect.catchAll((cause) =>
        cause instanceof ChainRpcError
          ? Effect.fail(cause)
          : /finalized block not found|not supported|unsupported|unknown block|invalid (block|argument|params)|method not found|-32601/i.test(
                providerWords(cause)
              )
            ? Effect.succeedNone
            : Effect.fail(rpcError("eth_getBlockByNumber finalized")(cause))
      )
    )
    // one answer: head and tag asked together (viem sends them as one batch, to one node)
    const tip =
      finality === "depth"
        ? Effect.map(head, (h) => ({ head: h, finalized: finalAt(h) }))
        : Effect.map(Effect.all([head, finalizedTag], { concurrency: 2 }), ([h, tag]) => {
            const depth = finalAt(h)
            return { head: h, finalized: Option.isSome(tag) && tag.value < depth ? tag.value : depth }
          })
    const finalized = Effect.map(tip, (t) => t.finalized)
    const blockHash = (number: bigint) =>
      Effect.tryPromise({
        try: () =>
          client.getBlock({ blockNumber: number }).then(
            (b) => Option.fromNullable(b.hash),
            (error: unknown) => {
              if (error instanceof BlockNotFoundError) return Option.none<string>()
              throw error
            }
          ),
        catch: rpcError(`eth_getBlockByNumber ${number}`)
      })

    const finalInclusion = (txHash: string, blockNumber: bigint) =>
      Effect.tryPromise({
        try: () =>
          client.getBlock({ blockNumber }).then(
            (b) => b.transactions.some((h) => h.toLowerCase() === txHash.toLowerCase()),
            (error: unknown) => {
              if (error instanceof BlockNotFoundError) return false
              throw error
            }
          ),
        catch: rpcError(`eth_getBlockByNumber ${blockNumber}`)
      })

    const nodeChecks = throttleCheck("BEP20", budget, budgeted.state)
    return {
      chain: "BEP20",
      skipsNumbers: false,
      nodeChecks,
      genesis,
      head,
      finalized,
      tip,
      blockHash,
      finalInclusion,
      blocks,
      balance,
      finalBalance,
      prepare,
      broadcast,
      landing,
      feeEstimate,
      finalNonce,
      transaction
    } satisfies ChainClient
  })
