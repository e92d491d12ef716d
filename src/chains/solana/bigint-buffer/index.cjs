"use strict"
// Facet's stand-in for the npm package bigint-buffer, which @solana/buffer-layout-utils uses to encode and
// decode u64 token amounts. The original tries a native binding first and warns on every start when it is
// absent; its JavaScript fallback encodes a value wider than the field, or a negative one, as some other
// number. This one is plain JavaScript and throws instead. Tested in bigint-buffer.test.ts.

const hexOf = (buf) => Buffer.from(buf).toString("hex")

/** @param {Buffer} buf big-endian bytes */
function toBigIntBE(buf) {
  const hex = hexOf(buf)
  return hex.length === 0 ? 0n : BigInt(`0x${hex}`)
}

/** @param {Buffer} buf little-endian bytes */
function toBigIntLE(buf) {
  return toBigIntBE(Buffer.from(buf).reverse())
}

/** @param {bigint} num @param {number} width */
function toBufferBE(num, width) {
  if (typeof num !== "bigint") throw new TypeError("Expected a BigInt")
  if (!Number.isSafeInteger(width) || width < 0) throw new RangeError(`invalid width ${width}`)
  if (num < 0n) throw new RangeError(`${num} is negative: it has no unsigned encoding`)
  const hex = num.toString(16)
  if (hex.length > width * 2 && num !== 0n) throw new RangeError(`${num} does not fit in ${width} bytes`)
  return Buffer.from(hex.padStart(width * 2, "0"), "hex")
}

/** @param {bigint} num @param {number} width */
function toBufferLE(num, width) {
  return toBufferBE(num, width).reverse()
}

module.exports = { toBigIntLE, toBigIntBE, toBufferLE, toBufferBE }
