import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { parseExact, readFixture, readJsonLines } from "../../../test/fixtures.js"
import {
  blockHeader,
  bloomMayContain,
  type CallFrame,
  CallTracerBlock,
  decodeInternalTransfers,
  decodeNativeTransfers,
  decodeTransferLogs,
  parityToFrames,
  type RawBlock,
  type RawLog,
  TRANSFER_TOPIC
} from "./evm-decoding.js"

const EtlLog = Schema.Struct({
  log_index: Schema.Number,
  transaction_hash: Schema.String,
  address: Schema.String,
  data: Schema.String,
  topics: Schema.Array(Schema.String),
  block_number: Schema.Number,
  block_hash: Schema.String
})
const EtlTransfer = Schema.Struct({
  token_address: Schema.String,
  from_address: Schema.String,
  to_address: Schema.String,
  value: Schema.Union(Schema.String, Schema.Number),
  transaction_hash: Schema.String,
  log_index: Schema.Number
})
const RpcEnvelope = <A, I>(result: Schema.Schema<A, I>) => Schema.Struct({ result })
const RpcLog = Schema.Struct({
  address: Schema.String,
  topics: Schema.Array(Schema.String),
  data: Schema.String,
  blockNumber: Schema.String,
  blockHash: Schema.String,
  transactionHash: Schema.String,
  logIndex: Schema.String
})
const RpcBlock = Schema.Struct({
  number: Schema.String,
  hash: Schema.String,
  parentHash: Schema.String,
  timestamp: Schema.String,
  transactions: Schema.Array(
    Schema.Struct({ hash: Schema.String, from: Schema.String, to: Schema.NullOr(Schema.String), value: Schema.String })
  )
})

const anyToken = () => "TOKEN"
const noParent = () => "0xparent"

describe("EVM decoding of recorded mainnet responses", () => {
  it.effect("eth_getFilterLogs of block 483920 decodes to its two token transfers", () =>
    Effect.gen(function* () {
      const { result } = yield* Schema.decodeUnknown(RpcEnvelope(Schema.Array(RpcLog)))(
        parseExact(readFixture("evm/block_483920/web3_response.eth_getFilterLogs_0x0.json"))
      )
      const transfers = decodeTransferLogs(
        result,
        (c) => (c === "0xf4eced2f682ce333f96f2d8966c613ded8fc95dd" ? "TKN" : undefined),
        noParent
      )
      expect(transfers.map((t) => [t.txHash.slice(0, 10), t.eventIndex, t.amount, t.blockNumber, t.currency])).toEqual([
        ["0x04cbcb23", 0, 100000n, 483920n, "TKN"],
        ["0xcea6f897", 1, 200000n, 483920n, "TKN"]
      ])
      expect(transfers[0]?.to.toLowerCase()).toBe("0xac4df82fe37ea2187bc8c011a23d743b4f39019a")
      // an unconfigured contract is not ours to count
      expect(decodeTransferLogs(result, () => undefined, noParent)).toEqual([])
    })
  )

  it.effect("the block body of 483920 yields its two native value transfers", () =>
    Effect.gen(function* () {
      const { result } = yield* Schema.decodeUnknown(RpcEnvelope(RpcBlock))(
        parseExact(readFixture("evm/block_483920/web3_response.eth_getBlockByNumber_0x76250_true.json"))
      )
      const block: RawBlock = result
      const native = decodeNativeTransfers(block, "ETH", () => true)
      expect(native.map((t) => [t.txHash.slice(0, 10), t.amount, t.eventIndex])).toEqual([
        ["0x463d53f0", 0x2714d78692b000n, -1],
        ["0x05287a56", 0x153c6ea30e6ee800n, -1]
      ])
      expect(blockHeader(block)).toMatchObject({
        number: 483920n,
        parentHash: "0x2610dc6eb941f4bcbddfd2362b999087ccd956e978f0ece4f8da96851283a2ba"
      })
      expect(native.every((t) => t.parentHash === block.parentHash)).toBe(true)
    })
  )

  it.effect("the 681 logs of blocks 17173049-50 decode to exactly the ETL's fungible token transfers", () =>
    Effect.gen(function* () {
      const logs = yield* Schema.decodeUnknown(Schema.Array(EtlLog))(
        readJsonLines("evm/blocks_17173049_17173050/expected_logs.jsonl")
      )
      const expected = yield* Schema.decodeUnknown(Schema.Array(EtlTransfer))(
        readJsonLines("evm/blocks_17173049_17173050/expected_token_transfers.jsonl")
      )
      const raw: Array<RawLog> = logs.map((l) => ({
        address: l.address,
        topics: l.topics,
        data: l.data,
        blockNumber: BigInt(l.block_number),
        blockHash: l.block_hash,
        transactionHash: l.transaction_hash,
        logIndex: l.log_index
      }))
      const decoded = decodeTransferLogs(raw, anyToken, noParent)
      // ethereum-etl also lists the 4-topic (ERC-721) transfers; those are not fungible payments
      const fungible = expected.filter((t) => {
        const log = logs.find((l) => l.transaction_hash === t.transaction_hash && l.log_index === t.log_index)
        return log?.topics.length === 3
      })
      expect(logs).toHaveLength(681)
      expect(decoded).toHaveLength(282)
      expect(fungible).toHaveLength(282)
      const key = (tx: string, i: number) => `${tx}:${i}`
      const byKey = new Map(decoded.map((t) => [key(t.txHash, t.eventIndex), t]))
      for (const t of fungible) {
        const d = byKey.get(key(t.transaction_hash, t.log_index))
        expect(d?.amount).toBe(BigInt(t.value))
        expect(d?.from.toLowerCase()).toBe(t.from_address)
        expect(d?.to.toLowerCase()).toBe(t.to_address)
      }
    })
  )

  it.effect("a pre-Byzantium receipt's Transfer log in block 1755635 decodes to the ETL's transfer", () =>
    Effect.gen(function* () {
      const receipt = yield* Schema.decodeUnknown(RpcEnvelope(Schema.Struct({ logs: Schema.Array(RpcLog) })))(
        parseExact(
          readFixture(
            "evm/blocks_1755634_1755635/web3_response.eth_getTransactionReceipt_0x2e3dcd051a91d3a694f6b8de2ac4b5fe7acdba55f58bcf8471ff00d4a430074d.json"
          )
        )
      )
      const [expected] = yield* Schema.decodeUnknown(Schema.Array(EtlTransfer))(
        readJsonLines("evm/blocks_1755634_1755635/expected_token_transfers.jsonl")
      )
      const decoded = decodeTransferLogs(receipt.result.logs, anyToken, noParent)
      expect(decoded).toHaveLength(1)
      expect(decoded[0]?.amount).toBe(BigInt(expected?.value ?? 0))
      expect(decoded[0]?.to.toLowerCase()).toBe(expected?.to_address)
    })
  )

  it.effect("a block's logsBloom tells whether a token may have logged a Transfer (blocks 1755634 and 1755635)", () =>
    Effect.gen(function* () {
      const Bloomed = RpcEnvelope(Schema.Struct({ logsBloom: Schema.TemplateLiteral("0x", Schema.String) }))
      const read = (n: string) =>
        Schema.decodeUnknown(Bloomed)(
          parseExact(readFixture(`evm/blocks_1755634_1755635/web3_response.eth_getBlockByNumber_${n}_true.json`))
        )
      const withLog = (yield* read("0x1ac9f3")).result.logsBloom
      const without = (yield* read("0x1ac9f2")).result.logsBloom
      const token = "0xbb9bc244d798123fde783fcc1c72d3bb8c189413"
      expect([bloomMayContain(withLog, TRANSFER_TOPIC), bloomMayContain(withLog, token)]).toEqual([true, true])
      expect(bloomMayContain(withLog, "0x0000000000000000000000000000000000000001")).toBe(false)
      expect([bloomMayContain(without, TRANSFER_TOPIC), bloomMayContain(without, token)]).toEqual([false, false])
    })
  )
})

describe("internal transfers from call traces", () => {
  const block = { number: "0x10", hash: "0xb1", parentHash: "0xb0", timestamp: "0x1", transactions: [] }
  const A = "0x1111111111111111111111111111111111111111"
  const B = "0x2222222222222222222222222222222222222222"
  const C = "0x3333333333333333333333333333333333333333"
  const tree: CallFrame = {
    type: "CALL",
    from: C,
    to: C,
    value: "0x5",
    calls: [
      { type: "CALL", from: C, to: A, value: "0x2" },
      { type: "DELEGATECALL", from: C, to: B, value: "0x9" },
      {
        type: "CALL",
        from: C,
        to: C,
        value: "0x1",
        error: "execution reverted",
        calls: [{ type: "CALL", from: C, to: B, value: "0x1" }]
      },
      { type: "STATICCALL", from: C, to: B },
      { type: "SELFDESTRUCT", from: C, to: B, value: "0x3" }
    ]
  }
  it("counts successful CALL and SELFDESTRUCT legs below the top level, by depth-first position; parity traces say the same", () => {
    const fromTracer = decodeInternalTransfers(block, "BNB", [{ txHash: "0xt1", result: tree }])
    expect(fromTracer.map((t) => [t.to.toLowerCase(), t.amount, t.eventIndex])).toEqual([
      [A, 2n, -2],
      [B, 3n, -7]
    ])
    const parity = parityToFrames([
      {
        type: "call",
        action: { from: C, to: C, value: "0x5", callType: "call" },
        traceAddress: [],
        transactionHash: "0xt1"
      },
      {
        type: "call",
        action: { from: C, to: A, value: "0x2", callType: "call" },
        traceAddress: [0],
        transactionHash: "0xt1"
      },
      {
        type: "call",
        action: { from: C, to: B, value: "0x9", callType: "delegatecall" },
        traceAddress: [1],
        transactionHash: "0xt1"
      },
      {
        type: "call",
        action: { from: C, to: C, value: "0x1", callType: "call" },
        error: "Reverted",
        traceAddress: [2],
        transactionHash: "0xt1"
      },
      {
        type: "call",
        action: { from: C, to: B, value: "0x1", callType: "call" },
        traceAddress: [2, 0],
        transactionHash: "0xt1"
      },
      { type: "call", action: { from: C, to: B, callType: "staticcall" }, traceAddress: [3], transactionHash: "0xt1" },
      {
        type: "suicide",
        action: { address: C, refundAddress: B, balance: "0x3" },
        traceAddress: [4],
        transactionHash: "0xt1"
      }
    ])
    expect(decodeInternalTransfers(block, "BNB", parity)).toEqual(fromTracer)
    // a transaction that failed as a whole moved nothing
    expect(
      decodeInternalTransfers(block, "BNB", [{ txHash: "0xt2", result: { ...tree, error: "out of gas" } }])
    ).toEqual([])
  })
})

/** Recorded from the devnet (anvil's `debug_traceBlockByNumber` with the callTracer) by calling test/contracts/Forwarder.sol. */
const RecordedForwarder = Schema.Record({
  key: Schema.String,
  value: Schema.Struct({
    block: Schema.Struct({ number: Schema.String, hash: Schema.String, transactions: Schema.Array(Schema.String) }),
    debug_traceBlockByNumber: CallTracerBlock
  })
})

describe("EVM internal transfers from a recorded call tree", () => {
  it.effect(
    "split3 to a, b, b: three legs with their own event indexes; tryForward's leg inside a reverted sub-call: none",
    () =>
      Effect.gen(function* () {
        const recorded = yield* Schema.decodeUnknown(RecordedForwarder)(
          JSON.parse(
            fs.readFileSync(
              path.join(import.meta.dirname, "../../../test/recorded/anvil-calltracer-forwarder.json"),
              "utf8"
            )
          )
        )
        const legsOf = (name: string) => {
          const entry = recorded[name]
          if (entry === undefined) return []
          const raw = {
            number: entry.block.number,
            hash: entry.block.hash,
            parentHash: "0x00",
            timestamp: "0x1",
            transactions: []
          }
          return decodeInternalTransfers(
            raw,
            "BNB",
            entry.debug_traceBlockByNumber.flatMap((t, i) =>
              "result" in t ? [{ txHash: t.txHash ?? entry.block.transactions[i] ?? "", result: t.result }] : []
            )
          )
        }
        expect(legsOf("split3").map((t) => [t.to.toLowerCase(), t.amount, t.eventIndex])).toEqual([
          ["0x1111111111111111111111111111111111111111", 3n * 10n ** 17n, -2],
          ["0x2222222222222222222222222222222222222222", 3n * 10n ** 17n, -3],
          ["0x2222222222222222222222222222222222222222", 3n * 10n ** 17n, -4]
        ])
        expect(legsOf("tryForward")).toEqual([])
      })
  )
})
