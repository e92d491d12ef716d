import type { ChainBlock, NormalizedTransfer } from "../chain-client.js"
import { evmAddress } from "../../keys/address-encoding.js"

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

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
