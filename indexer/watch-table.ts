import { ID_ALPHABET, ID_LENGTH } from "../src/ids.js"
import type { AddressKeys } from "./address-keys.js"

export interface WatchedWallet {
  readonly walletId: string
  readonly merchantId: string
  readonly purpose: "order" | "deposit"
}

const WALLET_PREFIX = "wal_"
/** A wallet id's 24 characters at 5 bits each. */
const ID_BYTES = (ID_LENGTH * 5) / 8
const ORDER = 0x8000_0000
/** The wallet's id is not `wal_` + 24 id characters: kept as a string on the side. */
const ODD_ID = 0x4000_0000
const MERCHANT = 0x3fff_ffff

const idCodes = (() => {
  const table = new Int8Array(128).fill(-1)
  for (let i = 0; i < ID_ALPHABET.length; i++) table[ID_ALPHABET.charCodeAt(i)] = i
  return table
})()

/**
 * Every watched address of one chain in a few typed arrays: the address as a fixed-width key, the
 * wallet id packed in 15 bytes, the merchant as an index into the merchants seen, the purpose as a bit;
 * an open-addressing hash table (linear probing, at most half full) of entry numbers over the keys. At
 * ten million addresses this is ~60 bytes each where a Map of strings to objects took ~650. A hit is
 * verified on the whole key, never on a hash alone: a false match would credit a stranger's transfer.
 */
export class WatchTable {
  private keys: Uint8Array
  private walletIds: Uint8Array
  private owners: Uint32Array
  private slots: Uint32Array
  /**
   * A slot holds entry + 1 in its low `indexBits` and a tag of the key's hash in the bits above: most
   * probes of a slot holding another key end on the tag, without reading that key (a cache miss at ten
   * million entries).
   */
  private indexBits = 10
  private count = 0
  private readonly merchants: Array<string> = []
  private readonly merchantIndex = new Map<string, number>()
  private readonly oddIds = new Map<number, string>()
  /** Addresses with no key (a shape the chain's key does not fit): few, kept exactly. */
  private readonly unkeyed = new Map<string, WatchedWallet>()
  private readonly scratch: Uint8Array
  private readonly idScratch = new Uint8Array(WALLET_PREFIX.length + ID_LENGTH)

  constructor(
    private readonly addressKeys: AddressKeys,
    capacity = 1_024
  ) {
    this.keys = new Uint8Array(capacity * addressKeys.width)
    this.walletIds = new Uint8Array(capacity * ID_BYTES)
    this.owners = new Uint32Array(capacity)
    this.slots = new Uint32Array(slotCountFor(capacity))
    this.indexBits = indexBitsFor(capacity)
    this.scratch = new Uint8Array(addressKeys.width)
  }

  get size() {
    return this.count + this.unkeyed.size
  }

  /** Bytes held by the table's arrays (outside the JS heap: typed arrays live in array buffers). */
  get arrayBytes() {
    return this.keys.byteLength + this.walletIds.byteLength + this.owners.byteLength + this.slots.byteLength
  }

  lookup(address: string): WatchedWallet | undefined {
    if (!this.addressKeys.pack(address, this.scratch, 0)) return this.unkeyed.get(address)
    const entry = this.find(this.scratch)
    return entry < 0 ? undefined : this.walletAt(entry)
  }

  add(address: string, wallet: WatchedWallet) {
    if (!this.addressKeys.pack(address, this.scratch, 0)) {
      this.unkeyed.set(address, wallet)
      return
    }
    const entry = this.entryForScratch()
    // the id's characters as bytes (one packer, the bulk load's); a longer id cannot be packed anyway
    const id = wallet.walletId
    const length = Math.min(id.length, this.idScratch.length)
    for (let i = 0; i < length; i++) this.idScratch[i] = Math.min(id.charCodeAt(i), 255)
    const packed = id.length === length && packWalletId(this.idScratch, 0, length, this.walletIds, entry * ID_BYTES)
    this.setOwner(entry, wallet.merchantId, wallet.purpose, packed ? undefined : wallet.walletId)
  }

  /**
   * `add` for a bulk load: the address and the wallet id as ASCII byte ranges of `data`, so ten million
   * rows make no strings but the merchants'.
   */
  addBytes(
    data: Uint8Array,
    address: readonly [number, number],
    walletId: readonly [number, number],
    merchantId: string,
    purpose: WatchedWallet["purpose"]
  ) {
    const [addressStart, addressEnd] = address
    const [idStart, idEnd] = walletId
    if (!this.addressKeys.packBytes(data, addressStart, addressEnd, this.scratch, 0)) {
      const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      this.add(text.toString("utf8", addressStart, addressEnd), {
        walletId: text.toString("utf8", idStart, idEnd),
        merchantId,
        purpose
      })
      return
    }
    const entry = this.entryForScratch()
    const packed = packWalletId(data, idStart, idEnd, this.walletIds, entry * ID_BYTES)
    this.setOwner(
      entry,
      merchantId,
      purpose,
      packed ? undefined : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8", idStart, idEnd)
    )
  }

  /** The entry of the key in `scratch`: the one holding it, or a new one placed in the index. */
  private entryForScratch() {
    if (this.count === this.owners.length) this.reserve(Math.max(1_024, Math.ceil(this.count / 4)))
    if ((this.count + 1) * 2 > this.slots.length) this.rehash(this.slots.length * 2)
    const hash = this.hashAt(this.scratch, 0)
    const slot = this.probe(this.scratch, hash)
    const stored = this.slots[slot] ?? 0
    if (stored !== 0) return this.entryOf(stored)
    const entry = this.count++
    const width = this.addressKeys.width
    // a loop: TypedArray.set costs more than a copy of a few dozen bytes
    for (let i = 0, o = entry * width; i < width; i++) this.keys[o + i] = this.scratch[i] ?? 0
    this.slots[slot] = this.slotValue(entry, hash)
    return entry
  }

  /** Room for `more` entries without growing on the way (a bulk load knows how many come). */
  reserve(more: number) {
    const capacity = this.count + more
    if (capacity <= this.owners.length) return
    this.resize(capacity)
    if (capacity * 2 > this.slots.length) this.rehash(slotCountFor(capacity))
  }

  /** Gives back what a reservation did not use. */
  trim() {
    if (this.owners.length > this.count) this.resize(this.count)
  }

  private resize(capacity: number) {
    const width = this.addressKeys.width
    const keys = new Uint8Array(capacity * width)
    keys.set(this.keys.subarray(0, this.count * width))
    const walletIds = new Uint8Array(capacity * ID_BYTES)
    walletIds.set(this.walletIds.subarray(0, this.count * ID_BYTES))
    const owners = new Uint32Array(capacity)
    owners.set(this.owners.subarray(0, this.count))
    this.keys = keys
    this.walletIds = walletIds
    this.owners = owners
    // more entries than the slots' index bits can number: fewer bits for the tag, every slot rewritten
    if (indexBitsFor(capacity) !== this.indexBits) this.rehash(this.slots.length)
  }

  private hashAt(keys: Uint8Array, offset: number) {
    // FNV-1a over the key's bytes, then a final mix so the low bits (the slot) depend on every byte
    let h = 0x811c9dc5
    for (let i = 0; i < this.addressKeys.width; i++) h = Math.imul(h ^ (keys[offset + i] ?? 0), 0x01000193)
    h ^= h >>> 15
    h = Math.imul(h, 0x2c1b3c6d)
    return h ^ (h >>> 12)
  }

  /** The entry whose key equals `key` (at offset 0), or -1. */
  private find(key: Uint8Array): number {
    const stored = this.slots[this.probe(key, this.hashAt(key, 0))] ?? 0
    return stored === 0 ? -1 : this.entryOf(stored)
  }

  /** The slot holding `key`'s entry, or the empty slot where it would go. */
  private probe(key: Uint8Array, hash: number): number {
    const width = this.addressKeys.width
    const mask = this.slots.length - 1
    const indexBits = this.indexBits
    const tag = tagOf(hash) << indexBits
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const stored = this.slots[slot] ?? 0
      if (stored === 0) return slot
      if ((stored ^ tag) >>> indexBits !== 0) continue
      const offset = this.entryOf(stored) * width
      let i = 0
      while (i < width && this.keys[offset + i] === key[i]) i++
      if (i === width) return slot
    }
  }

  private entryOf(stored: number) {
    return (stored & (2 ** this.indexBits - 1)) - 1
  }

  private slotValue(entry: number, hash: number) {
    return ((tagOf(hash) << this.indexBits) | (entry + 1)) >>> 0
  }

  private place(entry: number) {
    const mask = this.slots.length - 1
    const hash = this.hashAt(this.keys, entry * this.addressKeys.width)
    let slot = hash & mask
    while ((this.slots[slot] ?? 0) !== 0) slot = (slot + 1) & mask
    this.slots[slot] = this.slotValue(entry, hash)
  }

  private rehash(slotCount: number) {
    this.slots = new Uint32Array(slotCount)
    this.indexBits = indexBitsFor(this.owners.length)
    for (let entry = 0; entry < this.count; entry++) this.place(entry)
  }

  /** The entry's merchant and purpose, and its wallet id when it could not be packed (`oddId`). */
  private setOwner(entry: number, merchantId: string, purpose: WatchedWallet["purpose"], oddId: string | undefined) {
    let merchant = this.merchantIndex.get(merchantId)
    if (merchant === undefined) {
      merchant = this.merchants.length
      this.merchants.push(merchantId)
      this.merchantIndex.set(merchantId, merchant)
    }
    if (oddId === undefined) this.oddIds.delete(entry)
    else this.oddIds.set(entry, oddId)
    this.owners[entry] = (merchant | (oddId === undefined ? 0 : ODD_ID) | (purpose === "order" ? ORDER : 0)) >>> 0
  }

  private walletAt(entry: number): WatchedWallet {
    const owner = this.owners[entry] ?? 0
    return {
      walletId:
        (owner & ODD_ID) !== 0 ? (this.oddIds.get(entry) ?? "") : unpackWalletId(this.walletIds, entry * ID_BYTES),
      merchantId: this.merchants[owner & MERCHANT] ?? "",
      purpose: (owner & ORDER) !== 0 ? "order" : "deposit"
    }
  }
}

/** Bits that number entries 1…capacity in a slot (at most 31: the tag keeps at least one bit). */
const indexBitsFor = (capacity: number) => Math.min(31, Math.max(10, Math.ceil(Math.log2(capacity + 1))))

/** The tag bits of a key's hash, mixed apart from the low bits that chose its slot. */
const tagOf = (hash: number) => Math.imul(hash ^ (hash >>> 16), 0x85ebca6b) >>> 0

/** Slots for `capacity` entries at most half full, a power of two. */
const slotCountFor = (capacity: number) => {
  let slots = 1_024
  while (slots < capacity * 2) slots *= 2
  return slots
}

/** `wal_` + 24 id characters into 15 bytes; false for any other shape. */
const packWalletId = (data: Uint8Array, start: number, end: number, out: Uint8Array, offset: number): boolean => {
  if (end - start !== WALLET_PREFIX.length + ID_LENGTH) return false
  for (let i = 0; i < WALLET_PREFIX.length; i++) if (data[start + i] !== WALLET_PREFIX.charCodeAt(i)) return false
  let acc = 0
  let bits = 0
  let o = offset
  for (let i = start + WALLET_PREFIX.length; i < end; i++) {
    const char = data[i] ?? 0
    const code = char < 128 ? (idCodes[char] ?? -1) : -1
    if (code < 0) return false
    acc = (acc << 5) | code
    bits += 5
    if (bits >= 8) {
      bits -= 8
      out[o++] = (acc >>> bits) & 0xff
      acc &= (1 << bits) - 1
    }
  }
  return true
}

const unpackWalletId = (bytes: Uint8Array, offset: number) => {
  let id = WALLET_PREFIX
  let acc = 0
  let bits = 0
  for (let i = 0; i < ID_BYTES; i++) {
    acc = (acc << 8) | (bytes[offset + i] ?? 0)
    bits += 8
    while (bits >= 5) {
      bits -= 5
      id += ID_ALPHABET[(acc >>> bits) & 31]
    }
    acc &= (1 << bits) - 1
  }
  return id
}
