import type { Duration } from '../core/duration.js'
import { LockHandle } from './lock.js'

export interface RwLockOptions {
  ttl?: Duration
  /** Grant strictly in arrival order across both modes. Default false. */
  fair?: boolean
  /** Nested acquires in a scope re-enter; a writer may take the read lock (downgrade). Default true. */
  reentrant?: boolean
  lockDelay?: Duration
}

/**
 * Many readers or one writer. A writer in line holds back readers that arrive
 * after it, so a stream of readers never starves it; the readers queued
 * behind a writer are admitted together when it leaves.
 */
export class RwLock {
  constructor(
    readonly name: string,
    private readonly readHandle: LockHandle,
    private readonly writeHandle: LockHandle,
  ) {}

  /** The shared side: acquire / tryAcquire / using. */
  read(): LockHandle {
    return this.readHandle
  }

  /** The exclusive side: acquire / tryAcquire / using. */
  write(): LockHandle {
    return this.writeHandle
  }
}
