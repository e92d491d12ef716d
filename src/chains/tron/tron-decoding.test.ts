import { sha256 } from "@noble/hashes/sha2.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { parseExact, readFixture } from "../../../test/fixtures.js"
import { decodeTrc20Transfers, decodeTrxTransfers, TronTransaction, TronTransactionInfo } from "./tron-decoding.js"

const USDT_20 = "a614f803b6fd780986a42c78ec9c7f77e6ded13c"
const usdtOnly = (contract: string) => (contract === USDT_20 ? "USDT" : undefined)
const block = { number: 1n, hash: "blockhash", parentHash: "parenthash" }
const info = (file: string) => Schema.decodeUnknown(TronTransactionInfo)(parseExact(readFixture(`tron/${file}`)))
const tx = (file: string) => Schema.decodeUnknown(TronTransaction)(parseExact(readFixture(`tron/${file}`)))

describe("TRON decoding of recorded mainnet responses", () => {
  it.effect("a successful USDT transfer's info decodes to exactly its transfer", () =>
    Effect.gen(function*() {
      const transfers = decodeTrc20Transfers([yield* info("ledger_gettransactioninfobyid_0130dfde_usdt_transfer_success.json")], usdtOnly, block)
      expect(transfers).toEqual([{
        chain: "TRC20", currency: "USDT", txHash: "0130dfde9281a48378109039ef512229d5359fbee2a8adbb17ad73aebc67ea99", eventIndex: 0,
        from: "TL24LCps5FKwp3PoU1MvrYrwhi5LU1tHre", to: expect.stringMatching(/^T/), amount: 41_677_389n,
        blockNumber: 1n, blockHash: "blockhash", parentHash: "parenthash", success: true
      }])
      const older = decodeTrc20Transfers([yield* info("ledger_gettransactioninfobyid_225e55c4_usdt_transfer_success_2022.json")], usdtOnly, block)
      expect(older.map((t) => t.amount)).toEqual([300_000n])
      // a contract we do not watch is nobody's deposit
      expect(decodeTrc20Transfers([yield* info("ledger_gettransactioninfobyid_0130dfde_usdt_transfer_success.json")], () => undefined, block)).toEqual([])
    }))

  it.effect("a failed (OUT_OF_ENERGY) USDT call names the contract but counts nothing", () =>
    Effect.gen(function*() {
      const failed = yield* info("ledger_gettransactioninfobyid_13df06d5_usdt_OUT_OF_ENERGY.json")
      expect(failed.contract_address).toBe(`41${USDT_20}`)
      expect(decodeTrc20Transfers([failed], usdtOnly, block)).toEqual([])
    }))

  it.effect("a TRX TransferContract decodes to its native transfer, and its txID is the sha256 of raw_data_hex", () =>
    Effect.gen(function*() {
      const trx = yield* tx("ledger_trongrid_v1_account_tx_3f8b651b_trx_transfer_new_account.json")
      expect(Buffer.from(sha256(Buffer.from(trx.raw_data_hex, "hex"))).toString("hex")).toBe(trx.txID)
      expect(decodeTrxTransfers([trx], block)).toEqual([expect.objectContaining({
        currency: "TRX", eventIndex: -1, from: "TL24LCps5FKwp3PoU1MvrYrwhi5LU1tHre", amount: 150_466_320n, success: true
      })])
      // the USDT call is a TriggerSmartContract: no native transfer, and its calldata amount is the log's
      const usdtCall = yield* tx("ledger_trongrid_v1_account_tx_0130dfde_usdt_transfer.json")
      expect(decodeTrxTransfers([usdtCall], block)).toEqual([])
      const data = String(usdtCall.raw_data.contract[0]?.parameter.value.data ?? "")
      expect(BigInt(`0x${data.slice(-64)}`)).toBe(41_677_389n)
    }))
})
