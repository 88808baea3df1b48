/**
 * The one tiny interface every contender (baton, the raw baseline, each peer
 * library) is driven through. One adapter file per contender.
 */

/** Ends the hold taken by acquire(). */
export type Release = () => Promise<void>

export interface Contender {
  readonly label: string
  /** Waits up to the configured wait (30 s by default) and resolves with the release function. */
  acquire(key: string): Promise<Release>
  /** One attempt, no waiting: the release function, or null when the key is taken. */
  tryAcquire?(key: string): Promise<Release | null>
  /** Counters worth a note in the report (e.g. how often a peer's own retries ran out). */
  counters?(): Record<string, number>
  close(): Promise<void>
}

/**
 * How a peer waits: 'default' is the library's out-of-the-box retry policy,
 * 'fast' its most aggressive one (retry every 1 ms). Contenders that do not
 * poll (baton, async-mutex) ignore it.
 */
export type Profile = 'default' | 'fast'

export interface PeerOptions {
  /** Store URL: redis://… or postgres://… as the contender needs; ignored by in-process ones. */
  readonly url: string
  readonly ttlMs: number
  readonly waitMs: number
  readonly profile: Profile
  /** Permits of a semaphore contender (1 for the rest, which ignore it). */
  readonly permits: number
}

export interface PeerDef {
  readonly id: string
  readonly store: 'redis' | 'memory' | 'postgres' | 'etcd' | 'zookeeper'
  label(profile: Profile): string
  create(options: PeerOptions): Promise<Contender>
}
