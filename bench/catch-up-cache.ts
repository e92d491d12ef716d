/**
 * The few hundred most recently made blocks of a synthetic chain, kept so a block asked for twice in a
 * row (TRON: its body and its transaction infos; BSC: logs, body, receipts) is made once. Oldest out first.
 */
export class RecentBlocks<A> {
  private readonly entries = new Map<number, A>()

  constructor(private readonly capacity: number) {}

  getOrMake(n: number, make: (n: number) => A): A {
    const known = this.entries.get(n)
    if (known !== undefined) return known
    const made = make(n)
    this.entries.set(n, made)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
    return made
  }
}
