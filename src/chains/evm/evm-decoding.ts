import { Option, Schema } from "effect"
import { hexToBytes, keccak256, type Hex } from "viem"
import type { ChainBlock, NormalizedTransfer } from "../chain-client.js"
import { evmAddress } from "../../keys/address-encoding.js"

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

/**
 * Whether a block's 2048-bit `logsBloom` may hold a log with `value` (an emitting address or a topic):
 * the three bits its keccak names are set. False means surely not; true means perhaps.
 */
export const bloomMayContain = (bloom: Hex, value: Hex): boolean => {
  const bits = hexToBytes(bloom)
  if (bits.length !== 256) return true
  const hash = hexToBytes(keccak256(value))
  for (let i = 0; i < 6; i += 2) {
    const bit = (((hash[i] ?? 0) << 8) | (hash[i + 1] ?? 0)) & 2047
    if (((bits[255 - (bit >> 3)] ?? 0) & (1 << (bit & 7))) === 0) return false
  }
  return true
}

export interface RawLog {
  readonly address: string
  readonly topics: ReadonlyArray<string>
  readonly data: string
  readonly blockNumber: string | bigint
  readonly blockHash: string
  readonly transactionHash: string
  readonly logIndex: string | number
}

export interface RawTransaction {
  readonly hash: string
  readonly from: string
  readonly to: string | null
  readonly value: string | bigint
}

export interface RawBlock {
  readonly number: string | bigint
  readonly hash: string
  readonly parentHash: string
  readonly timestamp: string | bigint
  readonly transactions: ReadonlyArray<RawTransaction | string>
}

const big = (value: string | bigint | number) => (typeof value === "bigint" ? value : BigInt(value))

/**
 * EIP-55 spelling of a hex address (any case), remembered: the checksum is a keccak per address (~8 µs),
 * and the same addresses come back block after block (token contracts, exchanges, a merchant's deposit
 * addresses). The memory is bounded: past 100,000 addresses it starts again.
 */
const spelled = new Map<string, string>()
const checksummed = (hex40: string) => {
  const key = hex40.toLowerCase()
  const known = spelled.get(key)
  if (known !== undefined) return known
  const address = evmAddress(Buffer.from(key, "hex"))
  if (spelled.size >= 100_000) spelled.clear()
  spelled.set(key, address)
  return address
}

const topicAddress = (topic: string) => checksummed(topic.slice(-40))

/**
 * ERC-20/BEP20 Transfer logs of the configured tokens into normalized transfers. Only the 3-topic form
 * is a fungible transfer (the 4-topic form is ERC-721); other contracts are not ours to count.
 */
export const decodeTransferLogs = (
  logs: ReadonlyArray<RawLog>,
  currencyOf: (contract: string) => string | undefined,
  parentHashOf: (blockHash: string) => string
): ReadonlyArray<NormalizedTransfer> =>
  logs.flatMap((log) => {
    const currency = currencyOf(log.address.toLowerCase())
    if (currency === undefined || log.topics.length !== 3 || log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC) return []
    const [, fromTopic, toTopic] = log.topics
    if (fromTopic === undefined || toTopic === undefined) return []
    return [
      {
        chain: "BEP20" as const,
        currency,
        txHash: log.transactionHash,
        eventIndex: Number(big(log.logIndex)),
        from: topicAddress(fromTopic),
        to: topicAddress(toTopic),
        amount: big(log.data === "0x" ? "0x0" : log.data),
        blockNumber: big(log.blockNumber),
        blockHash: log.blockHash,
        parentHash: parentHashOf(log.blockHash),
        success: true
      }
    ]
  })

/** Native value transfers of a block body; `succeeded` tells which transactions did not revert. */
export const decodeNativeTransfers = (
  block: RawBlock,
  nativeCurrency: string,
  succeeded: (txHash: string) => boolean
): ReadonlyArray<NormalizedTransfer> =>
  block.transactions.flatMap((tx) => {
    if (typeof tx === "string" || tx.to === null || big(tx.value) === 0n) return []
    return [
      {
        chain: "BEP20" as const,
        currency: nativeCurrency,
        txHash: tx.hash,
        eventIndex: -1,
        from: checksummed(tx.from.slice(2)),
        to: checksummed(tx.to.slice(2)),
        amount: big(tx.value),
        blockNumber: big(block.number),
        blockHash: block.hash,
        parentHash: block.parentHash,
        success: succeeded(tx.hash)
      }
    ]
  })

export const blockHeader = (block: RawBlock): Omit<ChainBlock, "transfers"> => ({
  number: big(block.number),
  hash: block.hash,
  parentHash: block.parentHash,
  timestamp: Number(big(block.timestamp))
})

/** A frame of a call tree as the callTracer gives it (parity traces are turned into the same shape). */
export interface CallFrame {
  readonly type: string
  readonly from: string
  readonly to?: string | undefined
  readonly value?: string | undefined
  readonly error?: string | undefined
  readonly calls?: ReadonlyArray<CallFrame> | undefined
}

export const CallFrameSchema: Schema.Schema<CallFrame> = Schema.Struct({
  type: Schema.String,
  from: Schema.String,
  to: Schema.optional(Schema.String),
  value: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String),
  calls: Schema.optional(Schema.Array(Schema.suspend((): Schema.Schema<CallFrame> => CallFrameSchema)))
})

/**
 * `debug_traceBlockByNumber` with the callTracer: one result per transaction, in block order, or the
 * reason the node could not trace that transaction (anvil: "Resource not found" for a state it lacks).
 */
export const CallTracerBlock = Schema.Array(
  Schema.Union(
    Schema.Struct({ txHash: Schema.optional(Schema.String), result: CallFrameSchema }),
    Schema.Struct({ txHash: Schema.optional(Schema.String), error: Schema.String })
  )
)

/** `trace_block` (the parity namespace): every frame of every transaction, depth-first, with its path. */
export const ParityBlock = Schema.Array(
  Schema.Struct({
    type: Schema.String,
    action: Schema.Struct({
      from: Schema.optional(Schema.String),
      to: Schema.optional(Schema.String),
      value: Schema.optional(Schema.String),
      callType: Schema.optional(Schema.String),
      address: Schema.optional(Schema.String),
      refundAddress: Schema.optional(Schema.String),
      balance: Schema.optional(Schema.String)
    }),
    error: Schema.optional(Schema.String),
    traceAddress: Schema.Array(Schema.Number),
    transactionHash: Schema.optional(Schema.NullOr(Schema.String))
  })
)

/** Parity traces of a block as call trees, one per transaction (the same shape the callTracer gives). */
export const parityToFrames = (
  traces: typeof ParityBlock.Type
): ReadonlyArray<{ readonly txHash: string; readonly result: CallFrame }> => {
  const byTx = new Map<string, Array<(typeof traces)[number]>>()
  for (const t of traces) {
    if (t.transactionHash === undefined || t.transactionHash === null) continue
    byTx.set(t.transactionHash, [...(byTx.get(t.transactionHash) ?? []), t])
  }
  const frameOf = (t: (typeof traces)[number], children: ReadonlyArray<CallFrame>): CallFrame => {
    const suicide = t.type === "suicide" || t.type === "selfdestruct"
    return {
      type: suicide ? "SELFDESTRUCT" : t.type === "create" ? "CREATE" : (t.action.callType ?? "call").toUpperCase(),
      from: (suicide ? t.action.address : t.action.from) ?? "",
      to: suicide ? t.action.refundAddress : t.action.to,
      value: suicide ? t.action.balance : t.action.value,
      error: t.error,
      calls: children
    }
  }
  return [...byTx].map(([txHash, list]) => {
    const build = (path: ReadonlyArray<number>): CallFrame | undefined => {
      const self = list.find(
        (t) => t.traceAddress.length === path.length && t.traceAddress.every((n, i) => n === path[i])
      )
      if (self === undefined) return undefined
      const children = list
        .filter((t) => t.traceAddress.length === path.length + 1 && path.every((n, i) => t.traceAddress[i] === n))
        .sort((a, b) => (a.traceAddress[path.length] ?? 0) - (b.traceAddress[path.length] ?? 0))
        .flatMap((t) => Option.toArray(Option.fromNullable(build(t.traceAddress))))
      return frameOf(self, children)
    }
    return { txHash, result: build([]) ?? { type: "CALL", from: "" } }
  })
}

/**
 * Native value moved by internal calls (a contract wallet, a payout contract, a router): every CALL or
 * SELFDESTRUCT frame below the top level whose own frame and every frame above it succeeded, with value
 * and a recipient. DELEGATECALL and STATICCALL move nothing. The top level is the transaction's own value
 * (decodeNativeTransfers). Each leg's event index is -2 minus its depth-first position in the tree: stable
 * on every re-read, apart from log indexes (≥ 0) and the top level (-1).
 */
export const decodeInternalTransfers = (
  block: RawBlock,
  nativeCurrency: string,
  traces: ReadonlyArray<{ readonly txHash: string; readonly result: CallFrame }>
): ReadonlyArray<NormalizedTransfer> =>
  traces.flatMap(({ txHash, result }) => {
    if (result.error !== undefined) return []
    const out: Array<NormalizedTransfer> = []
    let position = 0
    // every frame takes a position, reverted ones too, so a leg's index never depends on what failed around it
    const walk = (frames: ReadonlyArray<CallFrame>, failedAbove: boolean) => {
      for (const frame of frames) {
        const index = position++
        const failed = failedAbove || frame.error !== undefined
        walk(frame.calls ?? [], failed)
        if (failed) continue
        const value = frame.value === undefined ? 0n : big(frame.value)
        const type = frame.type.toUpperCase()
        if (
          (type === "CALL" || type === "SELFDESTRUCT") &&
          value > 0n &&
          frame.to !== undefined &&
          /^0x[0-9a-fA-F]{40}$/.test(frame.to)
        ) {
          out.push({
            chain: "BEP20",
            currency: nativeCurrency,
            txHash,
            eventIndex: -2 - index,
            from: checksummed(frame.from.slice(2)),
            to: checksummed(frame.to.slice(2)),
            amount: value,
            blockNumber: big(block.number),
            blockHash: block.hash,
            parentHash: block.parentHash,
            success: true
          })
        }
      }
    }
    walk(result.calls ?? [], false)
    return out
  })
