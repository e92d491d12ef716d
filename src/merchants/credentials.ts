import { Redacted } from "effect"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * Secrets handed to a merchant. API keys and console tokens are shown once and stored only as
 * SHA-256 hashes (they are 256-bit random, so a plain hash is enough; no salt or KDF needed).
 */
export const API_KEY_PREFIX = "fk_live_"
export const CONSOLE_TOKEN_PREFIX = "fct_"
export const WEBHOOK_SECRET_PREFIX = "whsec_"
export const REFUND_CLAIM_PREFIX = "frc_"

const random = (prefix: string) => Redacted.make(`${prefix}${randomBytes(32).toString("base64url")}`)

export const newApiKey = () => random(API_KEY_PREFIX)
export const newConsoleToken = () => random(CONSOLE_TOKEN_PREFIX)
export const newWebhookSecret = () => random(WEBHOOK_SECRET_PREFIX)
/** A refund's claim link token (256-bit random, shown once in the claim URL; stored as its hash). */
export const newRefundClaimToken = () => random(REFUND_CLAIM_PREFIX)

export const hashSecret = (secret: Redacted.Redacted<string> | string): string =>
  createHash("sha256")
    .update(typeof secret === "string" ? secret : Redacted.value(secret))
    .digest("hex")

/** What may be shown of a key in listings and logs: its prefix and first characters. */
export const displayPrefix = (secret: Redacted.Redacted<string>): string =>
  Redacted.value(secret).slice(0, API_KEY_PREFIX.length + 6)

export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}
