import { Effect } from "effect"
import { CopyTextRows } from "../src/database/copy-text.js"
import type { Chain } from "../src/domain/chain.js"
import { WalletStore } from "../src/stores/wallet-store.js"
import { addressKeysOf } from "./address-keys.js"
import { type WatchedWallet, WatchTable } from "./watch-table.js"

export type { WatchedWallet } from "./watch-table.js"

const ORDER = Buffer.from("order")
const DEPOSIT = Buffer.from("deposit")

/** `data[start, end)` equals `bytes` (a few dozen bytes: a loop beats a call into Buffer.compare). */
const sameBytes = (data: Uint8Array, start: number, end: number, bytes: Uint8Array) => {
  if (end - start !== bytes.length) return false
  for (let i = bytes.length - 1; i >= 0; i--) if (data[start + i] !== bytes[i]) return false
  return true
}

export interface WatchListOptions {
  /** Rows per page when following new wallets. */
  readonly pageSize?: number
  /** More unread wallets than this are loaded with one COPY instead of pages (the first load). */
  readonly bulkThreshold?: number
}

/**
 * Every receive address of one chain, in memory, so attribution is a lookup by destination address,
 * never by amount or sender. Ten million addresses fit (watch-table.ts: ~60 bytes each). It follows new
 * wallets by their sequence number, from any process, before every batch of blocks, never past a number
 * still uncommitted (migration 0007). A large backlog (the first load) comes in one COPY, parsed from
 * bytes; the few wallets made between two batches come in pages.
 */
export class WatchList {
  private readonly table: WatchTable
  private lastSeq = 0
  private readonly pageSize: number
  private readonly bulkThreshold: number

  constructor(
    readonly chain: Chain,
    options: WatchListOptions = {}
  ) {
    this.table = new WatchTable(addressKeysOf(chain))
    this.pageSize = options.pageSize ?? 50_000
    this.bulkThreshold = options.bulkThreshold ?? 50_000
  }

  get size() {
    return this.table.size
  }

  /** Bytes of the table's typed arrays (not counted in the JS heap's used size). */
  get arrayBytes() {
    return this.table.arrayBytes
  }

  lookup(address: string): WatchedWallet | undefined {
    return this.table.lookup(address)
  }

  add(address: string, wallet: WatchedWallet) {
    this.table.add(address, wallet)
  }

  /**
   * Loads the wallets created since the last call (all of them the first time), up to the number below
   * which every wallet's transaction has ended: one still open may hold a lower number than one already
   * committed, and reading past it would skip it for good.
   */
  readonly refresh = Effect.gen(this, function* () {
    const wallets = yield* WalletStore
    const settled = yield* wallets.settledSeq
    if (settled - this.lastSeq > this.bulkThreshold) {
      yield* this.bulkLoad(settled)
      this.lastSeq = settled
      return this.table.size
    }
    for (;;) {
      const rows = yield* wallets.watchedPage(this.chain, this.lastSeq, settled, this.pageSize)
      for (const row of rows)
        this.add(row.address, { walletId: row.id, merchantId: row.merchant_id, purpose: row.purpose })
      const last = rows[rows.length - 1]
      if (rows.length < this.pageSize || last === undefined) {
        this.lastSeq = settled
        return this.table.size
      }
      this.lastSeq = last.seq
    }
  })

  /** Every wallet numbered in (lastSeq, settled], by COPY: bytes in, typed arrays filled, no row objects. */
  private bulkLoad(settled: number) {
    const table = this.table
    const chain = this.chain
    const from = this.lastSeq
    return Effect.gen(function* () {
      const wallets = yield* WalletStore
      // sized once: growing ten million entries step by step copies and re-indexes them many times over
      table.reserve(yield* wallets.watchedCount(chain, from, settled))
      // the merchant's string is made once per run of rows of one merchant, not once per row
      let merchant = ""
      let merchantBytes = Buffer.alloc(0)
      const rows = new CopyTextRows(4, (row) => {
        const purpose = sameBytes(row.data, row.start(3), row.end(3), ORDER)
          ? "order"
          : sameBytes(row.data, row.start(3), row.end(3), DEPOSIT)
            ? "deposit"
            : undefined
        if (row.isNull(0) || row.isNull(1) || row.isNull(2) || purpose === undefined) {
          throw new Error(`wallet ${row.text(1) ?? "?"} of ${chain} has no address, merchant or purpose`)
        }
        if (!sameBytes(row.data, row.start(2), row.end(2), merchantBytes)) {
          merchant = row.text(2) ?? ""
          merchantBytes = Buffer.from(row.data.subarray(row.start(2), row.end(2)))
        }
        if (row.isPlain(0) && row.isPlain(1)) {
          table.addBytes(row.data, [row.start(0), row.end(0)], [row.start(1), row.end(1)], merchant, purpose)
        } else {
          table.add(row.text(0) ?? "", { walletId: row.text(1) ?? "", merchantId: merchant, purpose })
        }
      })
      yield* wallets.copyWatched(chain, from, settled, (chunk) => rows.push(chunk))
      rows.end()
      table.trim()
    })
  }
}
