import { monotonicNow } from '../core/clock.js'
import { BatonError, invalidArgument } from '../core/errors.js'
import type { Duration } from '../core/duration.js'
import { checkedOnRead, type Lease } from '../core/lease.js'
import { compareNames } from '../core/list.js'
import { checkOptions, parseSignal, parseWait } from '../core/options.js'
import type { LockHandle } from './lock.js'

/** One name of a multi-lock: exclusive by default, or one side of a read-write lock. */
export type MultiPart = string | { readonly name: string; readonly mode?: 'exclusive' | 'read' | 'write' }

export interface MultiAcquireOptions {
  /** How long to wait for ALL the names together; default: until granted. */
  wait?: Duration
  /** Aborting it stops waiting with BatonError('ABORTED'); nothing stays held. */
  signal?: AbortSignal
}

/**
 * Several locks taken as one: all or none, without deadlock.
 *
 * The names are always taken in one global order (byte order of the name),
 * whatever order the caller lists them in, so two clients taking overlapping
 * sets can never each hold what the other waits for: the one that gets the
 * smallest shared name first gets the rest after whoever holds them now. Each
 * name waits in its store's line like a single lock (hand-overs, no polling).
 * A failed, timed-out or aborted acquire releases what it had taken before
 * it answers. Parts are renewed by the watchdog from the moment they are
 * taken, so earlier parts do not expire while later ones are awaited.
 */
export class MultiLock {
  /** The parts in the order they are taken. */
  readonly parts: readonly LockHandle[]

  constructor(parts: readonly LockHandle[]) {
    this.parts = [...parts].sort((a, b) => compareNames(a.name, b.name))
    for (let i = 1; i < this.parts.length; i++) {
      if (this.parts[i]!.name === this.parts[i - 1]!.name) throw invalidArgument(`multi(): "${this.parts[i]!.name}" is listed twice`)
    }
  }

  get names(): string[] {
    return this.parts.map((part) => part.name)
  }

  /** Waits for every name (by default until granted) and returns one MultiLease. */
  async acquire(options?: MultiAcquireOptions): Promise<MultiLease> {
    const opts = checkOptions<MultiAcquireOptions>(options, 'acquire()', ['wait', 'signal'])
    const waitMs = parseWait(opts.wait, Infinity)
    const signal = parseSignal(opts.signal)
    const deadline = monotonicNow() + waitMs
    return this.take((part, stop) => part.acquire({
      wait: waitMs === Infinity ? Infinity : Math.max(0, Math.floor(deadline - monotonicNow())),
      // The first part waits on the caller's signal; later ones also end when a part already taken is lost.
      ...(stop ? { signal: stop } : signal ? { signal } : {}),
      autoExtend: true,
    }), signal)
  }

  /** One attempt per name, never waits: a MultiLease, or null (nothing held) when any name is taken. */
  async tryAcquire(): Promise<MultiLease | null> {
    try {
      return await this.take(async (part) => {
        const lease = await part.tryAcquire({ autoExtend: true })
        if (!lease) throw BUSY
        return lease
      })
    } catch (error) {
      if (error === BUSY) return null
      throw error
    }
  }

  /** Acquires all, runs `fn` inside every part's reentrancy scope, always releases. */
  async using<R>(fn: (lease: MultiLease) => Promise<R> | R, options?: MultiAcquireOptions): Promise<R> {
    const lease = await this.acquire(options)
    try {
      const run = lease.leases.reduceRight<() => Promise<R> | R>((inner, part) => () => part.run(inner), () => fn(lease))
      return await run()
    } finally {
      await lease.release().catch(() => {})
    }
  }

  /**
   * Takes the parts in order. From the second on, each is given one signal
   * that ends its wait when the caller's signal aborts or a part already
   * taken is lost (a callback on each part, not a signal per part: this is
   * the whole cost of the set over taking the names by hand).
   */
  private async take(
    takePart: (part: LockHandle, stop: AbortSignal | undefined) => Promise<Lease>,
    signal?: AbortSignal,
  ): Promise<MultiLease> {
    const leases: Lease[] = []
    /** The callbacks below serve only while the set is being taken: a part that re-enters an outer hold must not keep them. */
    const whileTaking: (() => void)[] = []
    let stop: AbortController | undefined
    let loss: unknown
    const onAbort = () => stop!.abort(signal!.reason)
    try {
      for (const part of this.parts) {
        const lease = await takePart(part, stop?.signal)
        leases.push(lease)
        if (!stop && leases.length < this.parts.length) {
          stop = new AbortController()
          if (signal?.aborted) stop.abort(signal.reason)
          else signal?.addEventListener('abort', onAbort, { once: true })
        }
        whileTaking.push(lease.onLoss((reason) => {
          loss ??= reason
          stop?.abort(reason)
        }))
      }
      // A part lost while later ones were awaited (forced release, store fault): all or none.
      if (loss !== undefined) throw loss
    } catch (error) {
      // The loss of a part, not the ABORTED it caused in the wait for the next.
      await releaseAll(leases)
      throw loss ?? error
    } finally {
      signal?.removeEventListener('abort', onAbort)
      for (const remove of whileTaking) remove()
    }
    return new MultiLease(leases)
  }
}

const BUSY = Symbol('busy')

/**
 * Several holds as one: one signal, renewed together, released together.
 *
 * The lease ends as a whole: when any part is lost (forced release, expiry,
 * a failed renewal), `signal` aborts first, with that part's reason, and then
 * the other parts are released at once. Keeping them would only block others
 * for a set nobody can use any more; the signal has already told the code
 * holding them to stop (the one-holder property holds for the set as it
 * does for one lock: nobody is let in before the holder's signal fired).
 */
export class MultiLease implements AsyncDisposable {
  /** Made on first use of `signal`, as a single hold's. */
  private controller: AbortController | undefined
  private lossReason: unknown
  private released = false
  /** The release of the other parts after a loss, so release() waits for it. */
  private letGo: Promise<void> | undefined

  constructor(
    /** One Lease per name, in the order they were taken. */
    readonly leases: readonly Lease[],
  ) {
    for (const lease of leases) lease.onLoss((reason) => this.lose(reason))
  }

  get names(): string[] {
    return this.leases.map((lease) => lease.name)
  }

  /** The fencing token of each name: pass each to what that name protects. */
  get tokens(): Map<string, bigint> {
    return new Map(this.leases.map((lease) => [lease.name, lease.token]))
  }

  /** Aborts when ANY part is lost (its reason is that part's); the other parts are then released. */
  get signal(): AbortSignal {
    this.checkParts()
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.lossReason !== undefined) this.controller.abort(this.lossReason)
      checkedOnRead(this.controller.signal, () => this.checkParts())
    }
    return this.controller.signal
  }

  /** True while every part is held (by the monotonic clock at the moment it is read). */
  get held(): boolean {
    this.checkParts()
    return this.lossReason === undefined && !this.released && this.leases.every((lease) => lease.held)
  }

  /** Renews every part now, together. */
  async extend(ttl?: Duration): Promise<void> {
    this.checkParts()
    if (this.lossReason !== undefined) throw this.lossReason
    await Promise.all(this.leases.map((lease) => lease.extend(ttl)))
  }

  /** Releases every part (the last taken first); throws the first failure after trying all. */
  async release(): Promise<void> {
    this.released = true
    if (this.letGo) await this.letGo
    await releaseAll(this.leases, true)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release()
  }

  /** Looks at every part, so one past its deadline is lost (and this set with it) before anyone reads the set's state. */
  private checkParts(): void {
    if (this.lossReason !== undefined || this.released) return
    for (const lease of this.leases) if (!lease.held) break
  }

  private lose(reason: unknown): void {
    // A part re-entered from an outer hold may be lost after this set was released: not this set's loss.
    if (this.lossReason !== undefined || this.released) return
    this.lossReason = reason
    this.controller?.abort(reason)
    // A release that fails here (store unreachable) leaves the part to expire within its ttl; release() tries again.
    this.letGo = releaseAll(this.leases)
  }
}

async function releaseAll(leases: readonly Lease[], rethrow = false): Promise<void> {
  let failure: unknown
  for (let i = leases.length - 1; i >= 0; i--) {
    try {
      await leases[i]!.release()
    } catch (error) {
      // A part already released or lost is no failure of this release.
      if (error instanceof BatonError && (error.code === 'NOT_HOLDER' || error.code === 'LEASE_LOST')) continue
      failure ??= error
    }
  }
  if (rethrow && failure !== undefined) throw failure
}
