import { Schema } from "effect"
import { tronAddress } from "../../keys/address-encoding.js"
import type { NormalizedTransfer } from "../chain-client.js"

/** The TRON HTTP API shapes we read, declared once and decoded at the boundary. */
export const TronLog = Schema.Struct({
  address: Schema.String,
  topics: Schema.Array(Schema.String),
  data: Schema.optionalWith(Schema.String, { default: () => "" })
})

export const TronTransactionInfo = Schema.Struct({
  id: Schema.String,
  blockNumber: Schema.optional(Schema.Number),
  blockTimeStamp: Schema.optional(Schema.Number),
  fee: Schema.optional(Schema.Number),
  contract_address: Schema.optional(Schema.String),
  receipt: Schema.optional(Schema.Struct({ result: Schema.optional(Schema.String) })),
  log: Schema.optional(Schema.Array(TronLog))
})
export type TronTransactionInfo = typeof TronTransactionInfo.Type

export const TronContract = Schema.Struct({
  type: Schema.String,
  parameter: Schema.Struct({
    value: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    type_url: Schema.optional(Schema.String)
  })
})

export const TronTransaction = Schema.Struct({
  txID: Schema.String,
  ret: Schema.optional(Schema.Array(Schema.Struct({ contractRet: Schema.optional(Schema.String) }))),
  signature: Schema.optional(Schema.Array(Schema.String)),
  raw_data_hex: Schema.String,
  raw_data: Schema.Struct({
    contract: Schema.Array(TronContract),
    ref_block_bytes: Schema.String,
    ref_block_hash: Schema.String,
    expiration: Schema.Number,
    timestamp: Schema.optional(Schema.Number),
    fee_limit: Schema.optional(Schema.Number)
  })
})
export type TronTransaction = typeof TronTransaction.Type

export const TronBlock = Schema.Struct({
  blockID: Schema.String,
  block_header: Schema.Struct({
    raw_data: Schema.Struct({
      number: Schema.optionalWith(Schema.Number, { default: () => 0 }),
      parentHash: Schema.String,
      timestamp: Schema.optionalWith(Schema.Number, { default: () => 0 })
    })
  }),
  transactions: Schema.optionalWith(Schema.Array(TronTransaction), { default: () => [] })
})
export type TronBlock = typeof TronBlock.Type

/** keccak256("Transfer(address,address,uint256)") without 0x, as TRON logs carry it. */
const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

/** `41…` hex (21 bytes) or a bare 20-byte hex to a base58 `T…` address. */
export const hexToTron = (hex: string): string => {
  const clean = hex.replace(/^0x/, "").toLowerCase()
  const id = clean.length === 42 && clean.startsWith("41") ? clean.slice(2) : clean.slice(-40)
  return tronAddress(Buffer.from(id, "hex"))
}

const amountOf = (value: unknown): bigint =>
  typeof value === "number" || typeof value === "string" || typeof value === "bigint" ? BigInt(value) : 0n

/**
 * TRC20 transfers of the configured tokens from one block's transaction infos. Only a receipt with
 * `result == SUCCESS` counts: a failed call still names the contract but moved nothing.
 */
export const decodeTrc20Transfers = (
  infos: ReadonlyArray<TronTransactionInfo>,
  currencyOf: (contract20Hex: string) => string | undefined,
  block: { readonly number: bigint; readonly hash: string; readonly parentHash: string }
): ReadonlyArray<NormalizedTransfer> =>
  infos.flatMap((info) => {
    if (info.receipt?.result !== "SUCCESS") return []
    return (info.log ?? []).flatMap((log, eventIndex) => {
      const currency = currencyOf(log.address.toLowerCase().replace(/^41(?=[0-9a-f]{40}$)/, ""))
      const [topic, from, to] = log.topics
      if (currency === undefined || log.topics.length !== 3 || topic?.toLowerCase() !== TRANSFER_TOPIC || from === undefined || to === undefined) {
        return []
      }
      return [{
        chain: "TRC20" as const,
        currency,
        txHash: info.id,
        eventIndex,
        from: hexToTron(from),
        to: hexToTron(to),
        amount: BigInt(`0x${log.data === "" ? "0" : log.data}`),
        blockNumber: block.number,
        blockHash: block.hash,
        parentHash: block.parentHash,
        success: true
      }]
    })
  })

/** TRX TransferContract transfers of a block; the transaction's contractRet tells success. */
export const decodeTrxTransfers = (
  transactions: ReadonlyArray<TronTransaction>,
  block: { readonly number: bigint; readonly hash: string; readonly parentHash: string }
): ReadonlyArray<NormalizedTransfer> =>
  transactions.flatMap((tx) => {
    const contract = tx.raw_data.contract[0]
    if (contract === undefined || contract.type !== "TransferContract") return []
    const { amount, owner_address, to_address } = contract.parameter.value
    if (typeof owner_address !== "string" || typeof to_address !== "string") return []
    return [{
      chain: "TRC20" as const,
      currency: "TRX",
      txHash: tx.txID,
      eventIndex: -1,
      from: hexToTron(owner_address),
      to: hexToTron(to_address),
      amount: amountOf(amount),
      blockNumber: block.number,
      blockHash: block.hash,
      parentHash: block.parentHash,
      success: (tx.ret?.[0]?.contractRet ?? "SUCCESS") === "SUCCESS"
    }]
  })
