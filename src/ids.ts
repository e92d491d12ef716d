import { randomBytes } from "node:crypto"

/** The 32 characters of an identifier after its prefix (5 bits each). */
export const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
/** Characters after the prefix and its underscore. */
export const ID_LENGTH = 24

/**
 * An identifier with a type prefix (`mch_…`, `ord_…`): its creation time and 70 random bits, 24 characters
 * of a Crockford-style base32. Its SQL twin `facet_id(prefix)` (migration 0019) names rows created inside
 * a statement.
 */
export const newId = (prefix: string): string => newIds(prefix, 1)[0] ?? ""

/** Characters of an identifier that spell its creation time (milliseconds, 50 bits). */
const TIME_CHARS = 10

/** The time part: milliseconds since 1970 in the id alphabet, most significant first (sorts as it counts). */
const timePart = (ms: number) => {
  let out = ""
  let rest = ms
  for (let i = 0; i < TIME_CHARS; i++) {
    out = (ID_ALPHABET[rest % 32] ?? "0") + out
    rest = Math.floor(rest / 32)
  }
  return out
}

/**
 * `count` identifiers from one draw of randomness (a block's worth of rows at once): the creation time
 * first, then 70 random bits. Ids made later sort later, so the indexes keyed by them (every primary key,
 * the ledger's references) grow at their end instead of touching a random page of a large table per row.
 */
export const newIds = (prefix: string, count: number): Array<string> => {
  const time = `${prefix}_${timePart(Date.now())}`
  const random = ID_LENGTH - TIME_CHARS
  const bytes = randomBytes(random * count)
  const out: Array<string> = []
  for (let i = 0; i < count; i++) {
    let id = time
    for (let j = i * random; j < (i + 1) * random; j++) id += ID_ALPHABET[(bytes[j] ?? 0) & 31]
    out.push(id)
  }
  return out
}
