import type { LockSpec } from '../core/driver.js'
import type { Duration } from '../core/duration.js'
import type { Lease } from '../core/lease.js'
import { parseWeight } from '../core/options.js'
import { LockHandle, type AcquireOptions } from './lock.js'
import type { UsingOptions } from './using.js'

export interface SemaphoreOptions {
  /** How many permits in all. Every user of a name must agree on it while the name is in use. */
  permits: number
  ttl?: Duration
  /**
   * Grant permits strictly in arrival order. Default false: a free permit may
   * go to a newcomer while others wait, but never past a waiter that asks for
   * more than is free (see `weight`).
   */
  fair?: boolean
  lockDelay?: Duration
}

/** Options of a semaphore's acquire(), tryAcquire() and using(). */
export interface WeightOptions {
  /**
   * How many permits this hold takes, a whole number from 1 to `permits`
   * (default 1); anything else is INVALID_ARGUMENT. The semaphore never has
   * more than `permits` in use counting each hold's weight. A waiter that
   * does not fit yet stops everyone behind it (light or heavy), so a heavy
   * request at the head of the line is never starved by light ones.
   */
  weight?: number
}

export type SemaphoreAcquireOptions = AcquireOptions & WeightOptions

const SEMAPHORE_KEYS: readonly string[] = ['wait', 'signal', 'autoExtend', 'weight']

/**
 * At most `permits` in use, counting each hold's weight. Each hold is its own
 * Lease with its own ttl, token and watchdog, so a crashed holder's permits
 * (all of its weight) come back when its lease expires. Not reentrant: every
 * acquire is another hold of its own weight, also inside `using()`.
 */
export class Semaphore extends LockHandle {
  get permits(): number {
    return this.spec.permits
  }

  protected override get acquireKeys(): readonly string[] {
    return SEMAPHORE_KEYS
  }

  protected override specFor(options: WeightOptions): LockSpec {
    return { ...this.spec, weight: parseWeight(options.weight, this.spec.permits) }
  }

  override acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    return super.acquire(options)
  }

  override tryAcquire(options?: Pick<SemaphoreAcquireOptions, 'autoExtend' | 'weight'>): Promise<Lease | null> {
    return super.tryAcquire(options)
  }

  override using<R>(fn: (lease: Lease) => Promise<R> | R, options?: UsingOptions & WeightOptions): Promise<R> {
    return super.using(fn, options)
  }
}
