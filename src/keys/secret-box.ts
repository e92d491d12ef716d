import { hkdf } from "@noble/hashes/hkdf.js"
import { sha256 } from "@noble/hashes/sha2.js"
import { Config, Context, Effect, Layer, Redacted } from "effect"
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { MasterSeed } from "./master-seed.js"

/**
 * Secrets the service must read back (webhook secrets, TOTP seeds) are stored sealed: AES-256-GCM under a
 * key derived from the master seed by HKDF-SHA256, so a database dump alone reveals none of them. A stored
 * value is `sbx<version>:<base64url(nonce ‖ ciphertext ‖ tag)>`; the version names the key, so the key can be
 * rotated (FACET_SECRET_BOX_VERSION) and older values are still opened, then resealed at start.
 */
export class SecretBox extends Context.Tag("facet/SecretBox")<
  SecretBox,
  {
    readonly version: number
    readonly seal: (plain: string) => string
    /** The plain text of a stored value; a value stored before sealing existed is returned as it is. */
    readonly open: (stored: string) => string
    /** Whether a stored value is sealed under the current key (else it should be resealed). */
    readonly isCurrent: (stored: string) => boolean
  }
>() {}

const PREFIX = /^sbx(\d+):([A-Za-z0-9_-]+)$/

export const SecretBoxLive = Layer.effect(
  SecretBox,
  Effect.gen(function* () {
    const { seed } = yield* MasterSeed
    const version = yield* Config.integer("FACET_SECRET_BOX_VERSION").pipe(Config.withDefault(1), Effect.orDie)
    const keys = new Map<number, Uint8Array>()
    const keyFor = (v: number) => {
      let key = keys.get(v)
      if (key === undefined) {
        key = hkdf(
          sha256,
          Redacted.value(seed),
          new TextEncoder().encode("facet secret box"),
          new TextEncoder().encode(`v${v}`),
          32
        )
        keys.set(v, key)
      }
      return key
    }
    const seal = (plain: string) => {
      const nonce = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", keyFor(version), nonce)
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()])
      return `sbx${version}:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64url")}`
    }
    const open = (stored: string) => {
      const match = PREFIX.exec(stored)
      if (match === null) return stored
      const v = Number(match[1])
      if (v > version) throw new Error(`a secret sealed with key version ${v}, newer than this service's ${version}`)
      const bytes = Buffer.from(match[2] ?? "", "base64url")
      const decipher = createDecipheriv("aes-256-gcm", keyFor(v), bytes.subarray(0, 12))
      decipher.setAuthTag(bytes.subarray(bytes.length - 16))
      return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString("utf8")
    }
    return { version, seal, open, isCurrent: (stored: string) => stored.startsWith(`sbx${version}:`) }
  })
)
