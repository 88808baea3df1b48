import type { Duration } from '../core/duration.js'
import { LockHandle } from './lock.js'

export interface SemaphoreOptions {
  /** How many holders at once. Every user of a name must agree on it while the name is in use. */
  permits: number
  ttl?: Duration
  /** Grant permits strictly in arrival order. Default false. */
  fair?: boolean
  lockDelay?: Duration
}

/**
 * At most `permits` holders. Each permit is its own Lease with its own ttl,
 * token and watchdog, so a crashed holder's permit comes back when its lease
 * expires. Not reentrant: every acquire takes another permit.
 */
export class Semaphore extends LockHandle {
  get permits(): number {
    return this.spec.permits
  }
}
