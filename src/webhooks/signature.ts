import { createHmac, timingSafeEqual } from "node:crypto"

/** X-FACET-SIGNATURE: lowercase hex HMAC-SHA256 of the exact raw body, keyed with the webhook secret. */
export const signBody = (secret: string, body: Uint8Array | string): string =>
  createHmac("sha256", secret).update(body).digest("hex")

/** Constant-time check of a received signature against the raw body. */
export const isValidSignature = (secret: string, body: Uint8Array | string, signature: string | undefined): boolean => {
  if (signature === undefined || !/^[a-f0-9]{64}$/.test(signature)) return false
  return timingSafeEqual(Buffer.from(signBody(secret, body), "hex"), Buffer.from(signature, "hex"))
}
