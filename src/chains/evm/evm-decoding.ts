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

const topicAddress = (topic: string) => evmAddress(Buffer.from(topic.slice(-40), "hex"))

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
    return [{
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
    }]
  })

/** Native value transfers of a block body; `succeeded` tells which transactions did not revert. */
export const decodeNativeTransfers = (
  block: RawBlock,
  nativeCurrency: string,
  succeeded: (txHash: string) => boolean
): ReadonlyArray<NormalizedTransfer> =>
  block.transactions.flatMap((tx) => {
    if (typeof tx === "string" || tx.to === null || big(tx.value) === 0n) return []
    return [{
      chain: "BEP20" as const,
      currency: nativeCurrency,
      txHash: tx.hash,
      eventIndex: -1,
      from: evmAddress(Buffer.from(tx.from.slice(2), "hex")),
      to: evmAddress(Buffer.from(tx.to.slice(2), "hex")),
      amount: big(tx.value),
      blockNumber: big(block.number),
      blockHash: block.hash,
      parentHash: block.parentHash,
      success: succeeded(tx.hash)
    }]
  })

export const blockHeader = (block: RawBlock): Omit<ChainBlock, "transfers"> => ({
  number: big(block.number),
  hash: block.hash,
  parentHash: block.parentHash,
  timestamp: Number(big(block.timestamp))
})
