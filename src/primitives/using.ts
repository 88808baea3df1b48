import type { Duration } from '../core/duration.js'
import type { Lease } from '../core/lease.js'

export interface UsingOptions {
  wait?: Duration
  signal?: AbortSignal
}

/**
 * acquire → run in the hold's reentrancy scope → wait for a renewal in flight
 * → release. Shared by every primitive. A failed release after `fn` finished
 * is not thrown: the work is done and the store lets the lease expire.
 */
export async function using<R>(acquire: () => Promise<Lease>, fn: (lease: Lease) => Promise<R> | R): Promise<R> {
  const lease = await acquire()
  try {
    return await lease.run(fn)
  } finally {
    await lease.pendingRenewal?.catch(() => {})
    await lease.release().catch(() => {})
  }
}
