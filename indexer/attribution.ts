import type { NormalizedTransfer } from "../src/chains/chain-client.js"
import { fromBaseUnits } from "../src/money.js"
import type { WatchedWallet, WatchList } from "./watch-list.js"

export interface Attributed {
  readonly transfer: NormalizedTransfer
  readonly wallet: WatchedWallet
  /** The amount as a decimal string at the asset's on-chain decimals. */
  readonly amount: string
}

/**
 * The heart of attribution: a transfer is ours when its destination is a watched address (never by
 * amount or sender), it succeeded, and its currency is an asset of that chain.
 */
export const attributeTransfers = (
  transfers: ReadonlyArray<NormalizedTransfer>,
  watch: WatchList,
  decimalsOf: (currency: string) => number | undefined
): ReadonlyArray<Attributed> => {
  const out: Array<Attributed> = []
  for (const transfer of transfers) {
    if (!transfer.success || transfer.amount <= 0n) continue
    const wallet = watch.lookup(transfer.to)
    if (wallet === undefined) continue
    const decimals = decimalsOf(transfer.currency)
    if (decimals === undefined) continue
    out.push({ transfer, wallet, amount: fromBaseUnits(transfer.amount, decimals) })
  }
  return out
}
