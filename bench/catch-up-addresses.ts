import { createHash } from "node:crypto"
import { evmAddress, tronAddress } from "../src/keys/address-encoding.js"

/**
 * The accounts of the synthetic chains, as 20-byte ids in hex: the watched ones (the bench's deposit
 * addresses, the same on every run whatever the chain's seed, so a database keeps them between runs) and
 * a pool of strangers that send and receive everything else (a finite pool, like a real chain's busy
 * addresses, which also keeps the BSC server's bloom work cached).
 */
export type SyntheticChain = "TRC20" | "BEP20"

const idOf = (label: string) => createHash("sha256").update(label).digest("hex").slice(0, 40)

export const STRANGERS = 50_000

export class SyntheticAccounts {
  private readonly watchedIds: ReadonlyArray<string>
  private readonly strangerIds: Array<string | undefined> = []

  constructor(
    readonly chain: SyntheticChain,
    readonly watchedCount: number
  ) {
    this.watchedIds = Array.from({ length: watchedCount }, (_, i) => idOf(`facet-catch-up:${chain}:watched:${i}`))
  }

  /** The id of watched address `i` (0 ≤ i < watchedCount). */
  watched(i: number): string {
    return this.watchedIds[i] ?? idOf(`facet-catch-up:${this.chain}:watched:${i}`)
  }

  /** The id of stranger `j` (0 ≤ j < STRANGERS), made the first time it is asked for. */
  stranger(j: number): string {
    const known = this.strangerIds[j]
    if (known !== undefined) return known
    const made = idOf(`facet-catch-up:${this.chain}:stranger:${j}`)
    this.strangerIds[j] = made
    return made
  }

  /** Watched address `i` as the chain spells it: base58check `T…` (TRON) or EIP-55 hex (BEP20). */
  address(i: number): string {
    const bytes = Buffer.from(this.watched(i), "hex")
    return this.chain === "TRC20" ? tronAddress(bytes) : evmAddress(bytes)
  }
}
