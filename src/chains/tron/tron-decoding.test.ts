import { sha256 } from "@noble/hashes/sha2.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { parseExact, readFixture } from "../../../test/fixtures.js"
import {
  decodeInternalTrxTransfers,
  decodeTrc20Transfers,
  decodeTrxTransfers,
  TronTransaction,
  TronTransactionInfo
} from "./tron-decoding.js"

const USDT_20 = "a614f803b6fd780986a42c78ec9c7f77e6ded13c"
const usdtOnly = (contract: string) => (contract === USDT_20 ? "USDT" : undefined)
const block = { number: 1n, hash: "blockhash", parentHash: "parenthash" }
const info = (file: string) => Schema.decodeUnknown(TronTransactionInfo)(parseExact(readFixture(`tron/${file}`)))
const tx = (file: string) => Schema.decodeUnknown(TronTransaction)(parseExact(readFixture(`tron/${file}`)))

describe("TRON decoding of recorded mainnet responses", () => {
  it.effect("a successful USDT transfer's info decodes to exactly its transfer", () =>
    Effect.gen(function* () {
      const transfers = decodeTrc20Transfers(
        [yield* info("ledger_gettransactioninfobyid_0130dfde_usdt_transfer_success.json")],
        usdtOnly,
        block
      )
      expect(transfers).toEqual([
        {
          chain: "TRC20",
          currency: "USDT",
          txHash: "0130dfde9281a48378109039ef512229d5359fbee2a8adbb17ad73aebc67ea99",
          eventIndex: 0,
          from: "TL24LCps5FKwp3PoU1MvrYrwhi5LU1tHre",
          to: expect.stringMatching(/^T/),
          amount: 41_677_389n,
          blockNumber: 1n,
          blockHash: "blockhash",
          parentHash: "parenthash",
          success: true
        }
      ])
      const older = decodeTrc20Transfers(
        [yield* info("ledger_gettransactioninfobyid_225e55c4_usdt_transfer_success_2022.json")],
        usdtOnly,
        block
      )
      expect(older.map((t) => t.amount)).toEqual([300_000n])
      // a contract we do not watch is nobody's deposit
      expect(
        decodeTrc20Transfers(
          [yield* info("ledger_gettransactioninfobyid_0130dfde_usdt_transfer_success.json")],
          () => undefined,
          block
        )
      ).toEqual([])
    })
  )

  it.effect("a failed (OUT_OF_ENERGY) USDT call names the contract but counts nothing", () =>
    Effect.gen(function* () {
      const failed = yield* info("ledger_gettransactioninfobyid_13df06d5_usdt_OUT_OF_ENERGY.json")
      expect(failed.contract_address).toBe(`41${USDT_20}`)
      expect(decodeTrc20Transfers([failed], usdtOnly, block)).toEqual([])
    })
  )

  it.effect("a TRX TransferContract decodes to its native transfer, and its txID is the sha256 of raw_data_hex", () =>
    Effect.gen(function* () {
      const trx = yield* tx("ledger_trongrid_v1_account_tx_3f8b651b_trx_transfer_new_account.json")
      expect(Buffer.from(sha256(Buffer.from(trx.raw_data_hex, "hex"))).toString("hex")).toBe(trx.txID)
      expect(decodeTrxTransfers([trx], block)).toEqual([
        expect.objectContaining({
          currency: "TRX",
          eventIndex: -1,
          from: "TL24LCps5FKwp3PoU1MvrYrwhi5LU1tHre",
          amount: 150_466_320n,
          success: true
        })
      ])
      // the USDT call is a TriggerSmartContract: no native transfer, and its calldata amount is the log's
      const usdtCall = yield* tx("ledger_trongrid_v1_account_tx_0130dfde_usdt_transfer.json")
      expect(decodeTrxTransfers([usdtCall], block)).toEqual([])
      const data = String(usdtCall.raw_data.contract[0]?.parameter.value.data ?? "")
      expect(BigInt(`0x${data.slice(-64)}`)).toBe(41_677_389n)
    })
  )
})

/**
 * java-tron's `internal_transactions` as its HTTP API prints them (protobuf JSON: hex `41…` addresses, zero
 * and false fields omitted, `note` the hex of the call kind). No public recording of a mainnet body with
 * internal TRX legs was found (the shared fixtures' TronGrid bodies have `internal_transactions: []`), so
 * this is the shape the devnet serves and internal-trx-transfers.test.ts reads back from it.
 */
const internalInfo = (result: string) => ({
  id: "9f".repeat(32),
  blockNumber: 70_000_001,
  receipt: { result, energy_usage_total: 30_000 },
  internal_transactions: [
    // a batch payout: TRX to two addresses, a TRC10 token to a third, a zero-value call
    {
      hash: "01".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "4178c842ee63e9ca5fa0b0bbc5d7e3a8be8b7f4f1b",
      callValueInfo: [{ callValue: 1_500_000 }],
      note: "63616c6c"
    },
    {
      hash: "02".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "41d8b1e3c1f04b2c9b6fbd5e4a35e1a0e5b8d3f7a2",
      callValueInfo: [{ callValue: 2_500_000, tokenId: "" }],
      note: "63616c6c"
    },
    {
      hash: "03".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "41d8b1e3c1f04b2c9b6fbd5e4a35e1a0e5b8d3f7a2",
      callValueInfo: [{ callValue: 7, tokenId: "1002000" }],
      note: "63616c6c"
    },
    {
      hash: "04".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "4178c842ee63e9ca5fa0b0bbc5d7e3a8be8b7f4f1b",
      callValueInfo: [{}],
      note: "63616c6c"
    },
    // a leg inside a sub-call that reverted
    {
      hash: "05".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "4178c842ee63e9ca5fa0b0bbc5d7e3a8be8b7f4f1b",
      callValueInfo: [{ callValue: 9_000_000 }],
      note: "63616c6c",
      rejected: true
    },
    // a self-destruct that sends the contract's balance on
    {
      hash: "06".repeat(32),
      caller_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      transferTo_address: "41d8b1e3c1f04b2c9b6fbd5e4a35e1a0e5b8d3f7a2",
      callValueInfo: [{ callValue: 3 }],
      note: "73756963696465"
    }
  ]
})

describe("TRON internal transactions (TRX sent by contracts)", () => {
  it.effect(
    "credits every TRX leg of a successful transaction once, with a stable index; TRC10, zero, rejected legs and failed transactions credit nothing",
    () =>
      Effect.gen(function* () {
        const decoded = yield* Schema.decodeUnknown(TronTransactionInfo)(internalInfo("SUCCESS"))
        const legs = decodeInternalTrxTransfers([decoded], block)
        expect(legs.map((l) => [l.eventIndex, l.to, l.amount, l.currency, l.from])).toEqual([
          [-2, expect.stringMatching(/^T/), 1_500_000n, "TRX", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"],
          [-3, expect.stringMatching(/^T/), 2_500_000n, "TRX", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"],
          [-7, expect.stringMatching(/^T/), 3n, "TRX", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"]
        ])
        // the same body read again gives the same legs (idempotency keys are stable)
        expect(decodeInternalTrxTransfers([decoded], block)).toEqual(legs)
        for (const result of ["REVERT", "OUT_OF_ENERGY"]) {
          expect(
            decodeInternalTrxTransfers([yield* Schema.decodeUnknown(TronTransactionInfo)(internalInfo(result))], block)
          ).toEqual([])
        }
      })
  )
})
