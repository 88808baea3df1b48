/**
 * The chaos generator's random numbers: mulberry32, a small 32-bit PRNG
 * (one word of state, a few multiplies per draw). Not for secrets; chosen
 * because one seed gives the same sequence on every machine and Node
 * version, so a seed is a plan.
 */
export class Random {
  private state: number

  constructor(seed: number) {
    this.state = seed >>> 0
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }

  /** A generator of its own, derived from this one's seed and `salt` (one per process, per client). */
  static derive(seed: number, ...salt: number[]): Random {
    let s = seed >>> 0
    for (const n of salt) s = (Math.imul(s ^ (n + 0x9e3779b9), 0x85ebca6b) ^ (s >>> 13)) >>> 0
    return new Random(s)
  }
}
