import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { Chain } from "../src/domain/chain.js"

export interface WatchedWallet {
  readonly walletId: string
  readonly merchantId: string
  readonly purpose: "order" | "deposit"
}

/** EVM addresses compare case-insensitively; base58 ones (TRON, Solana) exactly. */
export const normalizeAddress = (chain: Chain, address: string) => (chain === "BEP20" || chain === "POLYGON" ? address.toLowerCase() : address)

const WalletRow = Schema.Struct({
  seq: Schema.NumberFromString,
  id: Schema.String,
  merchant_id: Schema.String,
  purpose: Schema.Literal("order", "deposit"),
  address: Schema.String
})

/**
 * Every receive address of one chain, in memory (a Map: millions of entries fit), so attribution is a
 * lookup by destination address, never by amount or sender. It follows new wallets by their sequence
 * number, from any process, before every batch of blocks, never past a number still uncommitted
 * (migration 0007).
 */
export class WatchList {
  private readonly byAddress = new Map<string, WatchedWallet>()
  private lastSeq = 0

  constructor(readonly chain: Chain, private readonly pageSize = 50_000) {}

  get size() {
    return this.byAddress.size
  }

  lookup(address: string): WatchedWallet | undefined {
    return this.byAddress.get(normalizeAddress(this.chain, address))
  }

  add(address: string, wallet: WatchedWallet) {
    this.byAddress.set(normalizeAddress(this.chain, address), wallet)
  }

  /**
   * Loads the wallets created since the last call (all of them the first time), up to the number below
   * which every wallet's transaction has ended: one still open may hold a lower number than one already
   * committed, and reading past it would skip it for good.
   */
  readonly refresh = Effect.gen(this, function*() {
    const sql = yield* SqlClient.SqlClient
    const [mark] = yield* sql<{ settled: string }>`SELECT wallets_settled_seq()::text AS settled`
    const settled = Number(mark?.settled ?? "0")
    for (;;) {
      const rows = yield* sql`
        SELECT w.seq::text AS seq, w.id, w.merchant_id, w.purpose, w.address FROM wallets w
        WHERE w.network = ${this.chain} AND w.kind = 'receive' AND w.seq > ${this.lastSeq} AND w.seq <= ${settled}
        ORDER BY w.seq LIMIT ${this.pageSize}`.pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(WalletRow))))
      for (const row of rows) this.add(row.address, { walletId: row.id, merchantId: row.merchant_id, purpose: row.purpose })
      const last = rows[rows.length - 1]
      if (rows.length < this.pageSize || last === undefined) {
        this.lastSeq = settled
        return this.byAddress.size
      }
      this.lastSeq = last.seq
    }
  })
}
