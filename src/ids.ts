import { randomBytes } from "node:crypto"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

/**
 * A random identifier with a type prefix (`mch_…`, `ord_…`): 120 bits, Crockford-style base32. Its SQL
 * twin `facet_id(prefix)` (migration 0005) names rows created inside a statement.
 */
export const newId = (prefix: string): string => newIds(prefix, 1)[0] ?? ""

/** `count` identifiers from one draw of randomness (a block's worth of rows at once). */
export const newIds = (prefix: string, count: number): Array<string> => {
  const bytes = randomBytes(24 * count)
  const out: Array<string> = []
  for (let i = 0; i < count; i++) {
    let id = `${prefix}_`
    for (let j = i * 24; j < i * 24 + 24; j++) id += ALPHABET[(bytes[j] ?? 0) & 31]
    out.push(id)
  }
  return out
}
