import { randomBytes } from "node:crypto"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

/** A random identifier with a type prefix (`mch_…`, `ord_…`): 120 bits, Crockford-style base32. */
export const newId = (prefix: string): string => {
  const bytes = randomBytes(24)
  let out = ""
  for (const byte of bytes) out += ALPHABET[byte & 31]
  return `${prefix}_${out}`
}
