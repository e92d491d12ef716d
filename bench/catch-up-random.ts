/**
 * The synthetic chains' dice: a small deterministic generator (mulberry32), so a block is the same every
 * time it is asked for (the indexer reads some blocks twice: a head, a retry, a walk back) and is made
 * from its number alone, without storing the chain.
 */
export class SyntheticRandom {
  private state: number

  constructor(...parts: ReadonlyArray<number>) {
    // mixes every part in (chain seed, block number, …): neighbouring numbers give unrelated streams
    let h = 0x9e3779b9
    for (const part of parts) {
      h = Math.imul(h ^ (part >>> 0), 0x85ebca6b)
      h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
      h ^= h >>> 16
      h = Math.imul(h ^ Math.floor(part / 2 ** 32), 0x27d4eb2f)
    }
    this.state = h >>> 0
  }

  /** The next 32 bits, as an unsigned integer. */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }

  /** A fraction in [0, 1). */
  fraction(): number {
    return this.next() / 2 ** 32
  }

  /** An integer in [0, n). */
  below(n: number): number {
    return Math.floor(this.fraction() * n)
  }

  /** `words` × 32 random bits as lowercase hex. */
  hex(words: number): string {
    let out = ""
    for (let i = 0; i < words; i++) out += this.next().toString(16).padStart(8, "0")
    return out
  }

  /**
   * `chars` hex digits that look random (signatures, roots): a slice of a fixed pool at a random place.
   * Cheap where `hex` is not: a block has hundreds of signatures, and nothing reads them.
   */
  filler(chars: number): string {
    const start = this.below(FILLER.length - chars)
    return FILLER.slice(start, start + chars)
  }
}

const FILLER = (() => {
  const rng = new SyntheticRandom(0xf111e7)
  return rng.hex(16_384)
})()
