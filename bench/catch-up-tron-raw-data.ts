/**
 * A TRON transaction's `raw_data` as java-tron serializes it (protobuf), in hex: what `raw_data_hex`
 * holds and what `txID` is the sha256 of. Only the fields and contract types the synthetic chain uses.
 * Checked against recorded mainnet transactions (test/recorded/mainnet/tron) byte for byte.
 */
export type TronContractValue =
  | { readonly type: "TransferContract"; readonly owner: string; readonly to: string; readonly amount: number }
  | { readonly type: "TriggerSmartContract"; readonly owner: string; readonly contract: string; readonly data: string }
  | {
      readonly type: "DelegateResourceContract"
      readonly owner: string
      readonly receiver: string
      readonly balance: number
    }

export interface TronRawData {
  readonly refBlockBytes: string
  readonly refBlockHash: string
  readonly expiration: number
  readonly timestamp: number
  readonly feeLimit?: number
  readonly contract: TronContractValue
}

const byteHex = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Values up to 2^53 (block times in ms, sun amounts), as a protobuf varint. */
const varint = (value: number): string => {
  let out = ""
  let v = value
  while (v >= 128) {
    out += byteHex[(v % 128) | 128]
    v = Math.floor(v / 128)
  }
  return out + byteHex[v]
}
const tag = (field: number, wire: 0 | 2) => varint(field * 8 + wire)
const bytesField = (field: number, hex: string) => tag(field, 2) + varint(hex.length / 2) + hex
const intField = (field: number, value: number) => tag(field, 0) + varint(value)

const CONTRACT_TYPE = { TransferContract: 1, TriggerSmartContract: 31, DelegateResourceContract: 57 } as const
export const typeUrl = (type: TronContractValue["type"]) => `type.googleapis.com/protocol.${type}`
const typeUrlHex = Object.fromEntries(
  Object.keys(CONTRACT_TYPE).map((t) => [t, Buffer.from(`type.googleapis.com/protocol.${t}`).toString("hex")])
)
const ENERGY = 1

const contractValueHex = (c: TronContractValue): string => {
  switch (c.type) {
    case "TransferContract":
      return bytesField(1, c.owner) + bytesField(2, c.to) + intField(3, c.amount)
    case "TriggerSmartContract":
      return bytesField(1, c.owner) + bytesField(2, c.contract) + bytesField(4, c.data)
    case "DelegateResourceContract":
      return bytesField(1, c.owner) + intField(2, ENERGY) + intField(3, c.balance) + bytesField(4, c.receiver)
  }
}

export const rawDataHex = (raw: TronRawData): string => {
  const parameter = bytesField(1, typeUrlHex[raw.contract.type] ?? "") + bytesField(2, contractValueHex(raw.contract))
  const contract = intField(1, CONTRACT_TYPE[raw.contract.type]) + bytesField(2, parameter)
  return (
    bytesField(1, raw.refBlockBytes) +
    bytesField(4, raw.refBlockHash) +
    intField(8, raw.expiration) +
    bytesField(11, contract) +
    intField(14, raw.timestamp) +
    (raw.feeLimit === undefined ? "" : intField(18, raw.feeLimit))
  )
}
