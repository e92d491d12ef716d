import { Schema } from "effect"

/**
 * What a synthetic chain paid to watched addresses over a range of blocks, per currency: the number of
 * successful transfers and their sum in base units. The chain server answers it (`/bench/paid`), the bench
 * compares it with what the indexer credited.
 */
export const PaidTotals = Schema.Record({
  key: Schema.String,
  value: Schema.Struct({ count: Schema.Number, amount: Schema.BigInt })
})
export type PaidTotals = typeof PaidTotals.Type

export class PaidTally {
  private readonly totals = new Map<string, { count: number; amount: bigint }>()

  add(currency: string, amount: bigint) {
    const t = this.totals.get(currency) ?? { count: 0, amount: 0n }
    this.totals.set(currency, { count: t.count + 1, amount: t.amount + amount })
  }

  /** The totals as PaidTotals' encoded form (amounts as decimal strings). */
  encoded(): typeof PaidTotals.Encoded {
    return Object.fromEntries(
      [...this.totals].map(([currency, t]) => [currency, { count: t.count, amount: t.amount.toString() }])
    )
  }
}
