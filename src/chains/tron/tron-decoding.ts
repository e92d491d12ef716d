import { Schema } from "effect"
import { tronAddress } from "../../keys/address-encoding.js"
import type { NormalizedTransfer } from "../chain-client.js"

/** The TRON HTTP API shapes we read, declared once and decoded at the boundary. */
export const TronLog = Schema.Struct({
  address: Schema.String,
  topics: Schema.Array(Schema.String),
  data: Schema.optionalWith(Schema.String, { default: () => "" })
})

/**
 * A call the TVM made while executing a transaction (java-tron's `internal_transactions`): the contract that
 * called, whom it called, the TRX (no `tokenId`) and TRC10 values it sent, the kind (`note` is the hex of
 * "call", "create" or "suicide"), and `rejected` when the call (or one above it) reverted.
 */
export const TronInternalTransaction = Schema.Struct({
  hash: Schema.optional(Schema.String),
  caller_address: Schema.String,
  transferTo_address: Schema.String,
  callValueInfo: Schema.optionalWith(
    Schema.Array(
      Schema.Struct({
        callValue: Schema.optional(Schema.Union(Schema.Number, Schema.String)),
        tokenId: Schema.optional(Schema.String)
      })
    ),
    { default: () => [] }
  ),
  note: Schema.optional(Schema.String),
  rejected: Schema.optional(Schema.Boolean)
})

export const TronTransactionInfo = Schema.Struct({
  id: Schema.String,
  blockNumber: Schema.optional(Schema.Number),
  blockTimeStamp: Schema.optional(Schema.Number),
  fee: Schema.optional(Schema.Number),
  contract_address: Schema.optional(Schema.String),
  receipt: Schema.optional(Schema.Struct({ result: Schema.optional(Schema.String) })),
  log: Schema.optional(Schema.Array(TronLog)),
  internal_transactions: Schema.optional(Schema.Array(TronInternalTransaction))
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

/** `41…` hex (21 bytes) or a bare 20-byte hex to a base58 `T…` address (a base58 one, as `visible` answers give, as is). */
export const hexToTron = (hex: string): string => {
  if (hex.startsWith("T")) return hex
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
      if (
        currency === undefined ||
        log.topics.length !== 3 ||
        topic?.toLowerCase() !== TRANSFER_TOPIC ||
        from === undefined ||
        to === undefined
      ) {
        return []
      }
      return [
        {
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
        }
      ]
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
    return [
      {
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
      }
    ]
  })

/**
 * TRX sent by contracts: the `internal_transactions` of transactions whose receipt is SUCCESS, each leg that
 * was not rejected and carries TRX (an entry without `tokenId`; TRC10 legs are not ours). A leg's event
 * index is −2 − its position in the list (java-tron lists them in execution order, depth first), distinct
 * from log indexes (≥ 0) and from the top-level transfer (−1), the same on every re-read.
 */
export const decodeInternalTrxTransfers = (
  infos: ReadonlyArray<TronTransactionInfo>,
  block: { readonly number: bigint; readonly hash: string; readonly parentHash: string }
): ReadonlyArray<NormalizedTransfer> =>
  infos.flatMap((info) => {
    if (info.receipt?.result !== "SUCCESS") return []
    return (info.internal_transactions ?? []).flatMap((leg, position) => {
      if (leg.rejected === true) return []
      // TRX has no token id (some encoders write "" or "_"); any other id is a TRC10 token
      const trx = leg.callValueInfo.find((v) => v.tokenId === undefined || v.tokenId === "" || v.tokenId === "_")
      const amount = amountOf(trx?.callValue ?? 0)
      if (amount <= 0n) return []
      return [
        {
          chain: "TRC20" as const,
          currency: "TRX",
          txHash: info.id,
          eventIndex: -2 - position,
          from: hexToTron(leg.caller_address),
          to: hexToTron(leg.transferTo_address),
          amount,
          blockNumber: block.number,
          blockHash: block.hash,
          parentHash: block.parentHash,
          success: true
        }
      ]
    })
  })
