/**
 * The one tiny interface every contender (baton, the raw baseline, each peer
 * library in bench/peers) is driven through by the measurement flows.
 */
import type { Baton } from '../baton.js'
import type { LockHandle } from '../primitives/lock.js'

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
 * baton as a Contender: one handle per key (a mutex, one side of an rwlock, a
 * semaphore), made once by `handleOf` and reused, as an application would.
 */
export function batonContender(baton: Baton, label: string, handleOf: (key: string) => LockHandle, waitMs: number): Contender {
  const handles = new Map<string, LockHandle>()
  const handle = (key: string): LockHandle => {
    let h = handles.get(key)
    if (!h) {
      h = handleOf(key)
      handles.set(key, h)
    }
    return h
  }
  return {
    label,
    async acquire(key) {
      const lease = await handle(key).acquire({ wait: waitMs })
      return () => lease.release()
    },
    async tryAcquire(key) {
      const lease = await handle(key).tryAcquire()
      return lease ? () => lease.release() : null
    },
    close: () => baton.close(),
  }
}
