import type { Chain } from "../src/domain/chain.js"

/**
 * An address as a fixed-width byte key, so millions of them live in one typed array instead of millions
 * of strings. EVM: the 20 bytes of `0x` + 40 hex digits, whatever their case (EVM addresses compare
 * case-insensitively). TRON and Solana (base58): each character as 6 bits — base58 fits in an alphanumeric
 * alphabet of 62 codes, none of them 0, so a shorter address padded with zero bits never equals a longer
 * one. Packing is per character, cheap enough for every transfer a scan sees; decoding base58 (a big-number
 * division per address) is not. A string that does not fit (another shape, too long) has no key: the watch
 * list keeps those few exactly, as strings.
 */
export interface AddressKeys {
  /** Bytes per key. */
  readonly width: number
  /** Writes the key of `address` at `offset`; false when it has none. */
  readonly pack: (address: string, out: Uint8Array, offset: number) => boolean
  /** The same from the address's ASCII bytes `data[start, end)` (a bulk load reads bytes, not strings). */
  readonly packBytes: (data: Uint8Array, start: number, end: number, out: Uint8Array, offset: number) => boolean
}

/** A character source for the EVM packer: a string's char codes or a byte range. */
type CharAt = (i: number) => number

const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

const codes = (() => {
  const table = new Uint8Array(128)
  for (let i = 0; i < ALPHANUMERIC.length; i++) table[ALPHANUMERIC.charCodeAt(i)] = i + 1
  return table
})()

const hexDigits = (() => {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < 16; i++) {
    table["0123456789abcdef".charCodeAt(i)] = i
    table["0123456789ABCDEF".charCodeAt(i)] = i
  }
  return table
})()

const hexDigit = (char: number) => (char < 128 ? (hexDigits[char] ?? -1) : -1)

const packEvm = (charAt: CharAt, length: number, out: Uint8Array, offset: number) => {
  if (length !== 42 || charAt(0) !== 48 || (charAt(1) | 32) !== 120) return false
  for (let i = 0; i < 20; i++) {
    const high = hexDigit(charAt(2 + 2 * i))
    const low = hexDigit(charAt(3 + 2 * i))
    if (high < 0 || low < 0) return false
    out[offset + i] = (high << 4) | low
  }
  return true
}

const evmKeys: AddressKeys = {
  width: 20,
  pack: (address, out, offset) => packEvm((i) => address.charCodeAt(i), address.length, out, offset),
  packBytes: (data, start, end, out, offset) => packEvm((i) => data[start + i] ?? 0, end - start, out, offset)
}

/**
 * Keys of up to `maxChars` alphanumeric characters, 6 bits each. The string and the byte packer are the
 * same loop written twice: a scan packs every transfer's address, and a shared loop taking a character
 * callback ran at half the speed.
 */
const base58Keys = (maxChars: number): AddressKeys => {
  const width = Math.ceil((maxChars * 6) / 8)
  return {
    width,
    pack: (address, out, offset) => {
      const length = address.length
      if (length === 0 || length > maxChars) return false
      let bits = 0
      let acc = 0
      let o = offset
      for (let i = 0; i < length; i++) {
        const char = address.charCodeAt(i)
        const code = char < 128 ? (codes[char] ?? 0) : 0
        if (code === 0) return false
        acc = (acc << 6) | code
        bits += 6
        if (bits >= 8) {
          bits -= 8
          out[o++] = (acc >>> bits) & 0xff
          acc &= (1 << bits) - 1
        }
      }
      if (bits > 0) out[o++] = (acc << (8 - bits)) & 0xff
      while (o < offset + width) out[o++] = 0
      return true
    },
    packBytes: (data, start, end, out, offset) => {
      const length = end - start
      if (length <= 0 || length > maxChars) return false
      let bits = 0
      let acc = 0
      let o = offset
      for (let i = start; i < end; i++) {
        const char = data[i] ?? 0
        const code = char < 128 ? (codes[char] ?? 0) : 0
        if (code === 0) return false
        acc = (acc << 6) | code
        bits += 6
        if (bits >= 8) {
          bits -= 8
          out[o++] = (acc >>> bits) & 0xff
          acc &= (1 << bits) - 1
        }
      }
      if (bits > 0) out[o++] = (acc << (8 - bits)) & 0xff
      while (o < offset + width) out[o++] = 0
      return true
    }
  }
}

/** TRON addresses are 34 characters; Solana's 32 to 44. */
export const addressKeysOf = (chain: Chain): AddressKeys =>
  chain === "BEP20" || chain === "POLYGON" ? evmKeys : chain === "TRC20" ? base58Keys(34) : base58Keys(44)
