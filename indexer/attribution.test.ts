import { describe, expect, it } from "@effect/vitest"
import type { NormalizedTransfer } from "../src/chains/chain-client.js"
import { attributeTransfers } from "./attribution.js"
import { WatchList } from "./watch-list.js"

const deposit = "0x00000000000000000000000000000000000000d1"

const transfer = (amount: bigint, from: string): NormalizedTransfer => ({
  chain: "BEP20",
  currency: "BNB",
  txHash: `0x${amount.toString(16).padStart(64, "0")}`,
  eventIndex: -1,
  from,
  to: deposit,
  amount,
  blockNumber: 10n,
  blockHash: "0xb",
  parentHash: "0xa",
  success: true
})

describe("attribution", () => {
  it("a cancellation (a zero-value self-transfer filling a nonce) credits nobody, even at a watched address", () => {
    const watch = new WatchList("BEP20")
    watch.add(deposit, { walletId: "w1", merchantId: "m1", purpose: "deposit" })
    // custody fills an abandoned nonce with 0 BNB from an address to itself; a real deposit of 1 wei
    // next to it still counts
    const attributed = attributeTransfers([transfer(0n, deposit), transfer(1n, "0xpayer")], watch, () => 18)
    expect(attributed.map((a) => [a.transfer.amount, a.amount])).toEqual([[1n, "0.000000000000000001"]])
  })
})
