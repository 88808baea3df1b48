import type { Driver, ExtendResult, HoldRef, LockSpec } from './driver.js'
import { setMaxListeners } from 'node:events'
import { aborted, clientClosed, invalidArgument, lockTimeout } from './errors.js'
import { monotonicNow } from './clock.js'
import { weightOf } from './compat.js'
import { channels, type AcquireEvent } from './events.js'
import { Hold, Lease } from './lease.js'
import { newOwnerId, newSecretOwnerId } from './owner.js'
import { scopeInFlow, type Reentry } from './reentrancy.js'
import { attemptSpecOf, obtain, WakeRoute, type AttemptRequest } from './waiter.js'
import { Watchdog } from './watchdog.js'

export interface DetachedOptions extends Omit<TakeOptions, 'autoExtend' | 'reentrant'> {
  /**
   * The owner to acquire as, instead of a new one: the lock server's
   * idempotent acquires derive it from the client's request id, so a retried
   * request is answered the hold its first attempt got (every driver attempt
   * is idempotent for an owner that already holds or waits).
   */
  owner?: string
  /** Who asks, when not this client (the lock server passes on its caller's). */
  description?: string
}

/** A grant handed out without a Hold (the lock server's leases). */
export interface DetachedGrant {
  readonly ref: HoldRef
  /** The lease the store set, counted from `startedAt` (monotonic) or later. */
  readonly ttlMs: number
  readonly startedAt: number
  readonly waitedMs: number
  /** Taken away (forced release) before the caller saw the grant. */
  readonly lost: boolean
}

export interface TakeOptions {
  ttlMs: number
  /** 0: one attempt only (tryAcquire). Infinity: until granted or aborted. */
  waitMs: number
  signal: AbortSignal | undefined
  autoExtend: boolean
  reentrant: boolean
  /** When busy and `waitMs` is 0: resolve null (tryAcquire) instead of LOCK_TIMEOUT. */
  nullIfBusy: boolean
  /** Internal (lock server): called once when the owner is in the store's line. */
  onWaiting?: (owner: string) => void
  /** Leader election: the candidate's announced value (AcquireRequest.value). */
  value?: string
}

/**
 * Turns driver attempts into Leases for one client: reentrancy first, then the
 * waiting engine, then a Hold wired to the watchdog and to store wake-ups.
 */
export class Keeper {
  readonly watchdog = new Watchdog()
  /** Live holds of this client by owner, for reentrancy counts in inspect(). */
  private readonly live = new Map<string, Hold>()
  /**
   * Internal, for the lock server: owners carry 128 random bits, because the
   * server hands them out inside lease ids and a guessable owner would let
   * anyone extend or release another's hold.
   */
  secretOwners = false
  /** Sent with every attempt (AcquireRequest.description): who asks, for operators. */
  description: string | undefined
  /** Aborted by close(), with the CLOSED error every pending acquire ends with. */
  private readonly closing = new AbortController()
  private readonly closingSignal = this.closing.signal
  /** take() calls not yet settled: close() waits for them to undo what they did in the store. */
  private taking = 0
  private drained: (() => void) | undefined
  private drain: Promise<void> | undefined

  constructor(readonly driver: Driver, readonly clientId: string) {
    // Every waiter listens to it; that is not a leak.
    setMaxListeners(0, this.closingSignal)
  }

  /** Aborts when close() is called (election observers end with it). */
  get closeSignal(): AbortSignal {
    return this.closingSignal
  }

  get closed(): boolean {
    return this.closingSignal.aborted
  }

  /** Throws CLOSED once close() was called. */
  checkOpen(): void {
    if (this.closed) throw this.closingSignal.reason as Error
  }

  async take(spec: LockSpec, options: TakeOptions): Promise<Lease | null> {
    this.checkOpen()
    this.taking++
    try {
      if (options.reentrant) {
        const scope = scopeInFlow(this.clientId, spec.name)
        if (scope) {
          const lease = await this.reenter(scope, spec, options)
          if (lease !== undefined) return lease
        }
      }

      const got = await this.obtainGrant(spec, options)
      if (!got) return null
      const { request, grant, route, unwatch, started } = got
      const hold = new Hold(this.driver, request, grant, this, unwatch)
      this.live.set(request.owner, hold)
      route.to(hold)
      if (options.autoExtend) this.watchdog.add(hold)
      if (channels.acquire.hasSubscribers) {
        publishAcquired(this.driver.store, request, monotonicNow() - started, grant.handoff, grant.attempts)
      }
      return new Lease(hold, this.clientId, spec.mode)
    } finally {
      if (--this.taking === 0) this.drained?.()
    }
  }

  /**
   * Internal, for the lock server: a grant with no Hold behind it (no loss
   * timer, no wake-up route, no entry in `live`). The server is stateless in
   * front of its store: it answers the ref inside a lease id and later
   * extends or releases it straight through the driver, so keeping a Hold per
   * HTTP lease would only cost memory (a timer and closures per held lock).
   * Never reentrant. Publishes the acquire event like take() (the server's
   * OpenTelemetry spans come from it), but no loss: nothing here watches the lease.
   */
  async takeDetached(spec: LockSpec, options: DetachedOptions): Promise<DetachedGrant | null> {
    this.checkOpen()
    this.taking++
    try {
      if (options.waitMs === 0 && options.nullIfBusy) return await this.tryDetached(spec, options.ttlMs, options.owner, options.description ?? this.description, options.value)
      const got = await this.obtainGrant(spec, options)
      if (!got) return null
      got.unwatch()
      // A forced release can overtake the grant on its way here.
      const lost = got.route.take()?.some((wake) => wake.type === 'lost') ?? false
      const waitedMs = monotonicNow() - got.started
      // The lock server's grants are traced like a library acquire (baton/otel listens here).
      if (channels.acquire.hasSubscribers) publishAcquired(this.driver.store, got.request, waitedMs, got.grant.handoff, got.grant.attempts)
      return { ref: got.request, ttlMs: got.grant.ttlMs, startedAt: got.grant.startedAt, waitedMs, lost }
    } finally {
      if (--this.taking === 0) this.drained?.()
    }
  }

  /**
   * One attempt, no waiting: nothing can be handed over to an owner that is
   * not in line, so there is no wake-up to watch for (a forced release right
   * after the grant shows at the lease's next extend or release).
   */
  private async tryDetached(
    spec: LockSpec, ttlMs: number, given: string | undefined, description = this.description, value?: string,
  ): Promise<DetachedGrant | null> {
    const owner = given ?? this.newOwner()
    const started = monotonicNow()
    const request = attemptRequest(spec, owner, ttlMs, given !== undefined, description, value)
    const result = await this.driver.acquire(request).catch((error: unknown) => {
      // The attempt may still land after it failed here (a late answer): undo it, so no ghost holds the lock.
      this.driver.release(attemptSpecOf(request)).catch(() => {})
      throw error
    })
    if (result.status === 'conflict') throw invalidArgument(result.detail)
    if (result.status === 'busy') return null
    if (this.closed) {
      await this.driver.release(request).catch(() => {})
      this.checkOpen()
    }
    request.token = result.token
    const waitedMs = monotonicNow() - started
    // As in takeDetached: a server grant is traced like a library acquire.
    if (channels.acquire.hasSubscribers) publishAcquired(this.driver.store, request, waitedMs, false, 1)
    return { ref: request, ttlMs: result.ttlMs, startedAt: started, waitedMs, lost: false }
  }

  private newOwner(): string {
    return this.secretOwners ? newSecretOwnerId(this.clientId) : newOwnerId(this.clientId)
  }

  /** A new owner's attempts until granted (watching its wake-ups), or null when busy and `nullIfBusy`. */
  private async obtainGrant(spec: LockSpec, options: DetachedOptions & { value?: string }) {
    const owner = options.owner ?? this.newOwner()
    const route = new WakeRoute()
    const unwatch = this.driver.watch(spec.name, owner, route.deliver)
    const started = monotonicNow()
    const request = attemptRequest(spec, owner, options.ttlMs, false, options.description ?? this.description, options.value)
    let grant
    try {
      grant = await obtain(this.driver, request, options.waitMs, route, options.signal, options.nullIfBusy, this.closingSignal, options.onWaiting)
    } catch (error) {
      unwatch()
      throw error
    }
    if (!grant) {
      unwatch()
      return null
    }
    if (this.closed) {
      // close() came while the grant was on its way: leave nothing behind.
      unwatch()
      await this.driver.release(request).catch(() => {})
      this.checkOpen()
    }
    request.token = grant.token
    return { request, grant, route, unwatch, started }
  }

  /** Called by a hold when it ends (released or lost). */
  forget(hold: Hold): void {
    this.watchdog.remove(hold)
    this.live.delete(hold.ref.owner)
  }

  /**
   * Re-enters the hold this flow is inside of. A flow nested in the innermost
   * open re-entry goes in at once; a sibling flow (started side by side inside
   * the same scope) waits locally for its turn, within `wait`. Undefined when
   * the hold ended meanwhile: the caller then asks the store like anyone else.
   */
  private async reenter(scope: Reentry, spec: LockSpec, options: TakeOptions): Promise<Lease | null | undefined> {
    const started = monotonicNow()
    for (;;) {
      const hold = scope.hold as Hold
      const at = hold.active ? hold.turns.around(scope) : undefined
      if (!at) return undefined
      const held = hold.ref
      const fits = held.mode === spec.mode || (held.mode === 'write' && spec.mode === 'read')
      if (!fits) {
        throw invalidArgument(
          `cannot take "${spec.name}" as ${spec.mode} while this flow holds it as ${held.mode}: ` +
            (held.mode === 'read' && spec.mode === 'write'
              ? 'upgrading a read lock to a write lock would deadlock; release the read lock first'
              : 'release the held lock first'),
        )
      }
      if (hold.turns.isInnermost(at)) {
        hold.count += 1
        if (channels.acquire.hasSubscribers) {
          const { name, owner, token, mode } = hold.ref
          channels.acquire.publish({ name, owner, token, mode, store: this.driver.store, waitedMs: monotonicNow() - started, reentered: true, handoff: false } satisfies AcquireEvent)
        }
        return new Lease(hold, this.clientId, spec.mode, hold.turns.enter(hold, at))
      }
      const left = started + options.waitMs - monotonicNow()
      if (left <= 0) {
        if (options.nullIfBusy) return null
        throw lockTimeout(spec.name, Math.round(monotonicNow() - started))
      }
      await this.turnOrStop(hold, spec.name, left, options.signal)
    }
  }

  /** Waits until a re-entry of `hold` ends; throws on timeout, abort or close. */
  private async turnOrStop(hold: Hold, name: string, leftMs: number, signal: AbortSignal | undefined): Promise<void> {
    this.checkOpen()
    if (signal?.aborted) throw aborted(name, signal.reason)
    const turn = hold.turns.changed()
    let timer: NodeJS.Timeout | undefined
    let onStop!: () => void
    const stopped = new Promise<'stopped'>((resolve) => {
      onStop = () => resolve('stopped')
      signal?.addEventListener('abort', onStop, { once: true })
      this.closingSignal.addEventListener('abort', onStop, { once: true })
    })
    const timedOut = new Promise<'timeout'>((resolve) => {
      if (Number.isFinite(leftMs)) timer = setTimeout(() => resolve('timeout'), leftMs)
    })
    const outcome = await Promise.race([turn.promise, stopped, timedOut])
    turn.cancel()
    clearTimeout(timer)
    signal?.removeEventListener('abort', onStop)
    this.closingSignal.removeEventListener('abort', onStop)
    this.checkOpen()
    if (signal?.aborted) throw aborted(name, signal.reason)
    if (outcome === 'timeout') throw lockTimeout(name, Math.round(leftMs))
  }

  /** Reentrant handles on `owner`'s hold when this client has it, else 1. */
  /** Live holds of this client. */
  get holdCount(): number {
    return this.live.size
  }

  /*
   * Acting on a hold by its ref (spec, owner, token), whether or not this
   * process acquired it. Internal, for the lock server: its lease ids carry the
   * ref, so any server sharing the store can extend or release a lease another
   * server granted. Not in the public index: a library user always has the
   * Lease, and handing out raw refs would bypass its state machine. When this
   * process has the Hold, it goes through the Hold so its timers and events
   * stay right; otherwise straight to the driver, with the same events.
   */

  /** Renews many refs in one driver batch. */
  async extendRefs(refs: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    this.checkOpen()
    const sentAt = monotonicNow()
    const results = await this.driver.extend(refs, ttlMs)
    refs.forEach((ref, i) => {
      const result = results[i]!
      const hold = this.localHold(ref)
      if (hold) hold.applyExtend(result, sentAt, ttlMs)
      else if (result.status === 'extended' && channels.extend.hasSubscribers) channels.extend.publish(this.event(ref))
    })
    return results
  }

  /** Releases a ref; true if it was held. */
  async releaseRef(ref: HoldRef): Promise<boolean> {
    this.checkOpen()
    const hold = this.localHold(ref)
    if (hold) return hold.release()
    const held = await this.driver.release(ref)
    if (held && channels.release.hasSubscribers) channels.release.publish(this.event(ref))
    return held
  }

  /** Turns a write ref into a read ref of the same token; false if the hold is gone. */
  async downgradeRef(ref: HoldRef): Promise<boolean> {
    this.checkOpen()
    if (!this.driver.downgrade || ref.mode !== 'write') return false
    const hold = this.localHold(ref)
    if (hold) {
      await hold.downgrade()
      return hold.active
    }
    return this.driver.downgrade(ref)
  }

  private localHold(ref: HoldRef): Hold | undefined {
    const hold = this.live.get(ref.owner)
    return hold?.active && hold.ref.token === ref.token && hold.ref.name === ref.name ? hold : undefined
  }

  private event(ref: HoldRef): { name: string; owner: string; token: bigint; mode: HoldRef['mode']; store: string } {
    return { name: ref.name, owner: ref.owner, token: ref.token, mode: ref.mode, store: this.driver.store }
  }

  countOf(owner: string): number {
    const hold = this.live.get(owner)
    return hold?.active ? hold.count : 1
  }

  /**
   * Ends every pending acquire with CLOSED and waits until each has undone
   * what it did in the store (its line entry, a grant racing the close).
   * Holds already granted stay until released or expired.
   */
  async close(): Promise<void> {
    if (!this.closed) this.closing.abort(clientClosed())
    this.watchdog.close()
    if (this.taking > 0) await (this.drain ??= new Promise<void>((resolve) => { this.drained = resolve }))
  }
}

/**
 * One object serves as every attempt's request and then as the hold's ref.
 * Spelled out, not spread: V8 turns `{ ...spec, more }` into a slow
 * dictionary object, which cost more than the rest of an acquire.
 * `retry`: the owner may already hold or wait (an idempotent repeat).
 */
function attemptRequest(
  spec: LockSpec, owner: string, ttlMs: number, retry: boolean, description: string | undefined, value?: string,
): AttemptRequest & { token: bigint } {
  return {
    name: spec.name, kind: spec.kind, mode: spec.mode, fair: spec.fair, permits: spec.permits,
    lockDelayMs: spec.lockDelayMs, weight: weightOf(spec), owner, ttlMs, enqueue: false, queueTtlMs: 0, retry, token: 0n, description, value,
  }
}

/**
 * The acquire event of a grant, made from its request (also the hold's ref).
 * Spelled out, not spread from hold.event(): a spread there made the event a
 * dictionary object and cost more than the memory store's whole pair
 * (17 → 70 µs with one listener, measured).
 */
function publishAcquired(store: string, request: AttemptRequest & { token: bigint }, waitedMs: number, handoff: boolean, attempts: number): void {
  channels.acquire.publish({
    name: request.name, owner: request.owner, token: request.token, mode: request.mode, store,
    waitedMs, reentered: false, handoff, kind: request.kind, fair: request.fair, attempts,
  } satisfies AcquireEvent)
}
