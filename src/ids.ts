import { randomBytes } from "node:crypto"

/** The 32 characters of an identifier after its prefix (5 bits each). */
export const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
/** Characters after the prefix and its underscore. */
export const ID_LENGTH = 24

/**
 * A random identifier with a type prefix (`mch_…`, `ord_…`): 120 bits, Crockford-style base32. Its SQL
 * twin `facet_id(prefix)` (migration 0005) names rows created inside a statement.
 */
export const newId = (prefix: string): string => newIds(prefix, 1)[0] ?? ""

/** `count` identifiers from one draw of randomness (a block's worth of rows at once). */
export const newIds = (prefix: string, count: number): Array<string> => {
  const bytes = randomBytes(ID_LENGTH * count)
  const out: Array<string> = []
  for (let i = 0; i < count; i++) {
    let id = `${prefix}_`
    for (let j = i * ID_LENGTH; j < (i + 1) * ID_LENGTH; j++) id += ID_ALPHABET[(bytes[j] ?? 0) & 31]
    out.push(id)
  }
  return out
}
