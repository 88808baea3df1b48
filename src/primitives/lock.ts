import type { LockSpec } from '../core/driver.js'
import type { Duration } from '../core/duration.js'
import type { Keeper } from '../core/keeper.js'
import type { Lease } from '../core/lease.js'
import { checkOptions, optionalBoolean, parseSignal, parseWait } from '../core/options.js'
import { using, type UsingOptions } from './using.js'

export interface AcquireOptions {
  /** How long to wait for the lock: a duration, 0 for not at all; default: until granted. */
  wait?: Duration
  /** Aborting it stops waiting with BatonError('ABORTED'). */
  signal?: AbortSignal
  /** Keep renewing the lease (about every ttl/3) until it is released. */
  autoExtend?: boolean
}

const ACQUIRE_KEYS: readonly string[] = ['wait', 'signal', 'autoExtend']

/**
 * One way of taking a name (a mutex, one side of a read-write lock, a
 * semaphore permit). All three primitives are this class with another spec.
 */
export class LockHandle {
  constructor(
    protected readonly keeper: Keeper,
    readonly spec: LockSpec,
    protected readonly ttlMs: number,
    protected readonly reentrant: boolean,
  ) {}

  get name(): string {
    return this.spec.name
  }

  /** The options acquire() knows; a semaphore adds `weight`. */
  protected get acquireKeys(): readonly string[] {
    return ACQUIRE_KEYS
  }

  /** The spec one acquire asks for (a semaphore sets its weight from the options). */
  protected specFor(_options: object): LockSpec {
    return this.spec
  }

  /** Waits for the lock (by default until granted) and returns its Lease. */
  async acquire(options?: AcquireOptions): Promise<Lease> {
    const opts = checkOptions<AcquireOptions>(options, 'acquire()', this.acquireKeys)
    const lease = await this.keeper.take(this.specFor(opts), {
      ttlMs: this.ttlMs,
      waitMs: parseWait(opts.wait, Infinity),
      autoExtend: optionalBoolean(opts.autoExtend, 'autoExtend', false),
      reentrant: this.reentrant,
      signal: parseSignal(opts.signal),
      nullIfBusy: false,
    })
    return lease!
  }

  /** One attempt, never waits: a Lease, or null when someone else holds the lock. */
  async tryAcquire(options?: Pick<AcquireOptions, 'autoExtend'>): Promise<Lease | null> {
    const opts = checkOptions<AcquireOptions>(options, 'tryAcquire()', this.acquireKeys.filter((k) => k !== 'wait' && k !== 'signal'))
    return this.keeper.take(this.specFor(opts), {
      ttlMs: this.ttlMs,
      waitMs: 0,
      autoExtend: optionalBoolean(opts.autoExtend, 'autoExtend', false),
      reentrant: this.reentrant,
      signal: undefined,
      nullIfBusy: true,
    })
  }

  /**
   * Acquires, runs `fn` with the lease kept alive by the watchdog, and always
   * releases, also when `fn` throws. Inside `fn`, nested acquires of this lock
   * re-enter it. Watch `lease.signal`: it aborts if the hold is lost.
   */
  async using<R>(fn: (lease: Lease) => Promise<R> | R, options?: UsingOptions): Promise<R> {
    const opts = checkOptions<UsingOptions>(options, 'using()', this.acquireKeys.filter((k) => k !== 'autoExtend'))
    return using(() => this.acquire({ ...opts, autoExtend: true }), fn)
  }
}
