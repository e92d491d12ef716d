import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { parseExact, readFixture } from "../../../test/fixtures.js"
import { decodeSolanaTransaction, SolanaBlock, SolanaTransaction } from "./solana-decoding.js"

const slot = { number: 1n, hash: "slothash", parentHash: "parenthash" }
const tx = (file: string) => Schema.decodeUnknown(SolanaTransaction)(parseExact(readFixture(`solana/${file}`)))
const mints = (map: Record<string, string>) => (mint: string) => map[mint]

describe("Solana decoding of recorded responses", () => {
  it.effect("an SPL transfer into an associated token account is a deposit to its owner", () =>
    Effect.gen(function* () {
      const decoded = decodeSolanaTransaction(
        yield* tx("snap-solana-wallet_send-usdc-transfer_devnet.json"),
        slot,
        mints({ "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU": "USDC" })
      )
      expect(decoded).toEqual([
        {
          chain: "SOLANA",
          currency: "USDC",
          txHash: "3Zj5XkvE1Uec1frjue6SK2ND2cqhKPvPkZ1ZFPwo2v9iL4NX4b4WWG1wPNEQdnJJU8sVx7MMHjSH1HxoR21vEjoV",
          eventIndex: 1,
          from: "BLw3RweJmfbTapJRgnPRvd962YDjFYAnVGd1p5hmZ5tP",
          to: "BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe",
          amount: 10_000n,
          blockNumber: 1n,
          blockHash: "slothash",
          parentHash: "parenthash",
          success: true
        }
      ])
      // an unconfigured mint is nobody's deposit, and the fee payer's lost lamports are no deposit either
      expect(
        decodeSolanaTransaction(yield* tx("snap-solana-wallet_send-usdc-transfer_devnet.json"), slot, () => undefined)
      ).toEqual([])
    })
  )

  it.effect("a token account created in the same transaction counts from a pre-balance of 0 (Token-2022)", () =>
    Effect.gen(function* () {
      const decoded = decodeSolanaTransaction(
        yield* tx("snap-solana-wallet_send-spl-token-and-create-token-account_mainnet.json"),
        slot,
        mints({ HeLp6NuQkmYB4pYWo2zYs22mESHXPQYzXbB8n4V98jwC: "HELP" })
      )
      const tokens = decoded.filter((t) => t.currency === "HELP")
      expect(tokens).toHaveLength(1)
      expect(tokens[0]?.amount).toBe(10_000_000n)
    })
  )

  it.effect("a native SOL transfer to a new account is a SOL deposit; failed transactions move nothing", () =>
    Effect.gen(function* () {
      const native = decodeSolanaTransaction(
        yield* tx("snap-solana-wallet_native-sol-transfer_devnet.json"),
        slot,
        () => undefined
      )
      expect(native.map((t) => [t.currency, t.amount])).toEqual([["SOL", 100_000_000n]])
      expect(
        decodeSolanaTransaction(yield* tx("snap-solana-wallet_swap-failed-transaction_mainnet.json"), slot, () => "ANY")
      ).toEqual([])
      expect(decodeSolanaTransaction(yield* tx("snap-solana-wallet_spam-2_mainnet.json"), slot, () => "ANY")).toEqual(
        []
      )
    })
  )

  it.effect("a jsonParsed getBlock decodes; its failed transaction yields nothing", () =>
    Effect.gen(function* () {
      const block = yield* Schema.decodeUnknown(SolanaBlock)(
        parseExact(readFixture("solana/chainstorage_block_241043141_v2_getBlock_jsonParsed_trimmed.json"))
      )
      expect(block.parentSlot).toBe(241043140)
      expect(block.transactions.flatMap((t) => decodeSolanaTransaction(t, slot, () => "ANY"))).toEqual([])
      // the hand-edited block is only good for its shape: it decodes without error
      const edited = yield* Schema.decodeUnknown(SolanaBlock)(
        parseExact(
          readFixture("solana/chainstorage_block_new_token_account_parentSlot195545749_jsonParsed_EDITED.json")
        )
      )
      expect(edited.transactions.length).toBeGreaterThan(0)
      for (const t of edited.transactions) decodeSolanaTransaction(t, slot, () => "ANY")
    })
  )
})
