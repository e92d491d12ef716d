import { ed25519 } from "@noble/curves/ed25519.js"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { HDKey } from "@scure/bip32"
import { Context, Effect, Layer, Redacted } from "effect"
import { HDKey as Ed25519HDKey } from "micro-ed25519-hdkey"
import { evmAddress, secp256k1AccountId, solanaAddress, tronAddress } from "./address-encoding.js"
import { derivationPath, type KeyFamily } from "./derivation.js"
import { MasterSeed } from "./master-seed.js"

export interface KeyRef {
  readonly family: KeyFamily
  readonly account: number
  readonly index: number
}

export interface DerivedAddress extends KeyRef {
  readonly path: string
  readonly address: string
}

/**
 * Everything that needs a private key goes through here, so a remote signer (HSM, MPC) can replace the
 * local one: addresses for derivation paths, secp256k1 signatures over 32-byte digests (TRON, BEP20),
 * ed25519 signatures over messages (Solana). Private keys never leave the implementation.
 */
export class Signer extends Context.Tag("facet/Signer")<
  Signer,
  {
    readonly deriveAddresses: (
      family: KeyFamily,
      account: number,
      indexes: ReadonlyArray<number>
    ) => Effect.Effect<ReadonlyArray<DerivedAddress>>
    /** 65 bytes: r (32) ‖ s (32) ‖ recovery id (1), low-s. */
    readonly signDigest: (key: KeyRef, digest: Uint8Array) => Effect.Effect<Uint8Array>
    /** 64-byte ed25519 signature. */
    readonly signMessage: (key: KeyRef, message: Uint8Array) => Effect.Effect<Uint8Array>
  }
>() {}

const COIN: Record<Exclude<KeyFamily, "SOLANA">, number> = { TRON: 195, EVM: 60 }
const HARDENED = 0x80000000

/** The local signer: derives from the master seed in memory, caching the per-account branch nodes. */
export const LocalSignerLive = Layer.effect(
  Signer,
  Effect.gen(function* () {
    const { seed } = yield* MasterSeed
    const secpRoot = HDKey.fromMasterSeed(Redacted.value(seed))
    const edRoot = Ed25519HDKey.fromMasterSeed(Redacted.value(seed))
    const secpBranches = new Map<string, HDKey>()
    const edBranches = new Map<string, Ed25519HDKey>()

    // m/44'/coin'/account'/0: derived once per account, then one cheap child step per address
    const secpBranch = (family: Exclude<KeyFamily, "SOLANA">, account: number) => {
      const key = `${family}/${account}`
      let node = secpBranches.get(key)
      if (node === undefined) {
        node = secpRoot.derive(`m/44'/${COIN[family]}'/${account}'/0`)
        secpBranches.set(key, node)
      }
      return node
    }
    const edBranch = (account: number) => {
      const key = String(account)
      let node = edBranches.get(key)
      if (node === undefined) {
        node = edRoot.derive(`m/44'/501'/${account}'`)
        edBranches.set(key, node)
      }
      return node
    }

    const secpPrivate = (ref: KeyRef & { family: Exclude<KeyFamily, "SOLANA"> }) => {
      const privateKey = secpBranch(ref.family, ref.account).deriveChild(ref.index).privateKey
      if (privateKey === null) throw new Error("derived a public-only node")
      return privateKey
    }
    const edPrivate = (ref: KeyRef) => edBranch(ref.account).deriveChild(ref.index + HARDENED).privateKey

    const addressOf = (ref: KeyRef): string => {
      if (ref.family === "SOLANA")
        return solanaAddress(edBranch(ref.account).deriveChild(ref.index + HARDENED).publicKeyRaw)
      const id = secp256k1AccountId(secp256k1.getPublicKey(secpPrivate({ ...ref, family: ref.family }), false))
      return ref.family === "TRON" ? tronAddress(id) : evmAddress(id)
    }

    return {
      deriveAddresses: (family, account, indexes) =>
        Effect.sync(() =>
          indexes.map((index) => ({
            family,
            account,
            index,
            path: derivationPath(family, account, index),
            address: addressOf({ family, account, index })
          }))
        ),
      signDigest: (ref, digest) =>
        Effect.sync(() => {
          if (ref.family === "SOLANA") throw new Error("Solana keys sign messages, not digests")
          if (digest.length !== 32) throw new RangeError("a digest is 32 bytes")
          const recovered = secp256k1.sign(digest, secpPrivate({ ...ref, family: ref.family }), {
            prehash: false,
            format: "recovered"
          })
          // noble puts the recovery byte first; chains put it last
          const out = new Uint8Array(65)
          out.set(recovered.subarray(1), 0)
          out[64] = recovered[0] ?? 0
          return out
        }),
      signMessage: (ref, message) =>
        Effect.sync(() => {
          if (ref.family !== "SOLANA") throw new Error("only Solana keys sign raw messages")
          return ed25519.sign(message, edPrivate(ref))
        })
    }
  })
)
