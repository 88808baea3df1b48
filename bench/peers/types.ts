/**
 * Peer definitions: one adapter file per contender (baton, the raw baseline,
 * each peer library), each making a Contender (src/bench/contender.ts).
 */
import type { Contender } from '../../src/bench/contender.js'

export type { Contender, Release } from '../../src/bench/contender.js'

/**
 * How a peer waits: 'default' is the library's out-of-the-box retry policy,
 * 'fast' its most aggressive one (retry every 1 ms). Contenders that do not
 * poll (baton, async-mutex) ignore it.
 */
export type Profile = 'default' | 'fast'

export interface PeerOptions {
  /** Store URL: redis://…, postgres://… or mysql://… as the contender needs; ignored by in-process ones. */
  readonly url: string
  readonly ttlMs: number
  readonly waitMs: number
  readonly profile: Profile
  /** Permits of a semaphore contender (1 for the rest, which ignore it). */
  readonly permits: number
}

export interface PeerDef {
  readonly id: string
  readonly store: 'redis' | 'memory' | 'postgres' | 'mysql' | 'etcd' | 'zookeeper'
  label(profile: Profile): string
  create(options: PeerOptions): Promise<Contender>
}
