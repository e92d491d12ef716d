import { ed25519 } from "@noble/curves/ed25519.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { keccak_256 } from "@noble/hashes/sha3.js"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { base58 } from "@scure/base"
import { evmAddress, isEvmAddress, isSolanaAddress, secp256k1AccountId, tronAccountId } from "./address-encoding.js"
import { derivationPath, deriveKey } from "./derivation.js"
import { masterSeedFromMnemonic } from "./master-seed.js"
import { LocalSignerLive, Signer } from "./signer.js"
import { mnemonicToSeedSync } from "@scure/bip39"

const MNEMONIC = "test test test test test test test test test test test junk"

describe("HD derivation", () => {
  layer(LocalSignerLive.pipe(Layer.provide(masterSeedFromMnemonic(MNEMONIC))))((it) => {
    it.effect("matches the published vectors for BEP20, TRON and Solana", () =>
      Effect.gen(function* () {
        const signer = yield* Signer
        const [evm] = yield* signer.deriveAddresses("EVM", 0, [0])
        const [tron] = yield* signer.deriveAddresses("TRON", 0, [0])
        const [sol] = yield* signer.deriveAddresses("SOLANA", 0, [0])
        expect(evm).toMatchObject({ path: "m/44'/60'/0'/0/0", address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266" })
        expect(tron).toMatchObject({ path: "m/44'/195'/0'/0/0", address: "TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6" })
        expect(sol).toMatchObject({ path: "m/44'/501'/0'/0'", address: "oeYf6KAJkLYhBuR8CiGc6L4D4Xtfepr85fuDgA9kq96" })
      })
    )

    it.effect("the cached branch derivation equals full-path derivation for other accounts and indexes", () =>
      Effect.gen(function* () {
        const signer = yield* Signer
        const seed = mnemonicToSeedSync(MNEMONIC)
        for (const family of ["EVM", "TRON", "SOLANA"] as const) {
          const derived = yield* signer.deriveAddresses(family, 7, [0, 1, 42])
          for (const d of derived) {
            expect(d.address).toBe(deriveKey(seed, family, derivationPath(family, 7, d.index)).address)
          }
          expect(new Set(derived.map((d) => d.address)).size).toBe(3)
        }
      })
    )

    it.effect("signs digests that recover to the address, and Solana messages that verify", () =>
      Effect.gen(function* () {
        const signer = yield* Signer
        const digest = keccak_256(new TextEncoder().encode("pay 12.5 USDT"))
        const [evm] = yield* signer.deriveAddresses("EVM", 3, [5])
        const signature = yield* signer.signDigest({ family: "EVM", account: 3, index: 5 }, digest)
        expect(signature.length).toBe(65)
        const recoveredFormat = new Uint8Array(65)
        recoveredFormat[0] = signature[64] ?? 0
        recoveredFormat.set(signature.subarray(0, 64), 1)
        const publicKey = secp256k1.recoverPublicKey(recoveredFormat, digest, { prehash: false })
        const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false)
        expect(evmAddress(secp256k1AccountId(uncompressed))).toBe(evm?.address)

        const [tron] = yield* signer.deriveAddresses("TRON", 3, [5])
        const tronSig = yield* signer.signDigest({ family: "TRON", account: 3, index: 5 }, digest)
        recoveredFormat[0] = tronSig[64] ?? 0
        recoveredFormat.set(tronSig.subarray(0, 64), 1)
        const tronKey = secp256k1.Point.fromBytes(
          secp256k1.recoverPublicKey(recoveredFormat, digest, { prehash: false })
        ).toBytes(false)
        expect(Buffer.from(secp256k1AccountId(tronKey))).toEqual(Buffer.from(tronAccountId(tron?.address ?? "") ?? []))

        const [sol] = yield* signer.deriveAddresses("SOLANA", 3, [5])
        const message = new TextEncoder().encode("solana message")
        const edSig = yield* signer.signMessage({ family: "SOLANA", account: 3, index: 5 }, message)
        expect(ed25519.verify(edSig, message, base58.decode(sol?.address ?? ""))).toBe(true)
      })
    )
  })

  describe("address validation", () => {
    layer(Layer.empty)((it) => {
      it.effect("accepts well-formed addresses and refuses broken checksums", () =>
        Effect.sync(() => {
          expect(isEvmAddress("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(true)
          expect(isEvmAddress("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266")).toBe(true)
          expect(isEvmAddress("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92267")).toBe(false)
          expect(isEvmAddress("0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(false)
          expect(tronAccountId("TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6")).toBeDefined()
          expect(tronAccountId("TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL7")).toBeUndefined()
          expect(isSolanaAddress("oeYf6KAJkLYhBuR8CiGc6L4D4Xtfepr85fuDgA9kq96")).toBe(true)
          expect(isSolanaAddress("0x1234")).toBe(false)
        })
      )
    })
  })
})
