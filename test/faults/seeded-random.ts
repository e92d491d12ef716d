/** A seeded pseudo-random sequence (mulberry32): a campaign that fails replays from its seed. */
export interface Random {
  /** In [0, 1). */
  readonly next: () => number
  /** An integer in [0, n). */
  readonly int: (n: number) => number
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  /** An independent sequence for one part of the campaign, so adding draws elsewhere does not shift it. */
  readonly fork: (label: string) => Random
}

export const seededRandom = (seed: number): Random => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  return {
    next,
    int,
    pick: <A>(items: ReadonlyArray<A>): A => {
      const item = items[int(items.length)]
      if (item === undefined) throw new Error("pick from an empty list")
      return item
    },
    fork: (label: string) =>
      seededRandom([...label].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, seed ^ 2166136261))
  }
}
