import type { Duration } from '../core/duration.js'
import { LockHandle } from './lock.js'

export interface MutexOptions {
  /** Lease length; the watchdog renews it for using() / autoExtend. Default '30s'. */
  ttl?: Duration
  /** Grant strictly in arrival order. Default false. */
  fair?: boolean
  /** Nested acquires in a using()/lease.run() scope re-enter the hold. Default true. */
  reentrant?: boolean
  /** Keep the name blocked this long after a hold expired (not after a release). Default 0. */
  lockDelay?: Duration
}

/** An exclusive lock: at most one holder at a time. */
export class Mutex extends LockHandle {}
