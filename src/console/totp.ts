import { base32 } from "@scure/base"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * RFC 6238 time-based one-time passwords as authenticator apps make them: HMAC-SHA1, 30-second steps,
 * 6 digits; one step of clock drift either way is accepted.
 */
const STEP_SECONDS = 30
const DIGITS = 6

/** A new shared secret, base32 without padding (what an authenticator app takes). */
export const newTotpSecret = () => base32.encode(randomBytes(20)).replace(/=+$/, "")

const codeAt = (secret: string, counter: number) => {
  const key = Buffer.from(base32.decode(secret.padEnd(Math.ceil(secret.length / 8) * 8, "=")))
  const message = Buffer.alloc(8)
  message.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac("sha1", key).update(message).digest()
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f
  const binary = mac.readUInt32BE(offset) & 0x7fffffff
  return String(binary % 10 ** DIGITS).padStart(DIGITS, "0")
}

export const totpCode = (secret: string, at = Date.now()) => codeAt(secret, Math.floor(at / 1000 / STEP_SECONDS))

/**
 * The time step a code was made for (one step of drift either way), or undefined when it matches none. The
 * caller accepts it only past the last step accepted for the account, so a code is never used twice.
 */
export const totpStep = (secret: string, code: string, at = Date.now()): number | undefined => {
  const given = Buffer.from(code.replace(/\s+/g, ""))
  const counter = Math.floor(at / 1000 / STEP_SECONDS)
  return [counter - 1, counter, counter + 1].find((c) => {
    const expected = Buffer.from(codeAt(secret, c))
    return expected.length === given.length && timingSafeEqual(expected, given)
  })
}

/** The otpauth URI an authenticator app scans. */
export const totpUri = (secret: string, account: string, issuer = "Facet") =>
  `otpauth://totp/${encodeURIComponent(`${issuer}:${account}`)}?secret=${secret}&issuer=${encodeURIComponent(issuer)}&algorithm=SHA1&digits=${DIGITS}&period=${STEP_SECONDS}`
