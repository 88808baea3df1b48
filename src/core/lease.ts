import type { Driver, HoldRef, Wake } from './driver.js'
import { BatonError, leaseLost } from './errors.js'
import { monotonicNow } from './clock.js'
import { parseTtl, type Duration } from './duration.js'
import { channels, type HoldEvent, type LostEvent } from './events.js'
import { safetyMarginMs } from './margin.js'
import { runHolding, scopeKey, Turns, type Reentry, type ScopedHold } from './reentrancy.js'
import { attemptSpecOf, type Grant } from './waiter.js'

type HoldState = 'held' | 'released' | 'lost'

/**
 * One hold in the store, shared by every reentrant Lease handle on it.
 * State machine: held → released (by the last handle) | lost (expiry, failed
 * renewal, forced release). Loss aborts `signal` once; nothing here throws
 * from a timer.
 */
export class Hold implements ScopedHold {
  state: HoldState = 'held'
  /** Reentrant handles not yet released. */
  count = 1
  /** Of those, handles taken as write: when they are gone but readers remain, the hold is downgraded. */
  writers = 0
  private turnsMade: Turns | undefined
  /** Monotonic instant the store's lease surely ends (from the last confirmed grant or renewal). */
  deadline = 0
  /** Monotonic instant from which the hold counts as lost here: `deadline` less the safety margin. */
  private lapsesAt = 0
  ttlMs: number
  /** Made on first use of `signal`: most holds end without anyone asking for it. */
  private abortController: AbortController | undefined
  /** Called once on loss, after the signal: a multi-lock's parts (a plain callback costs far less than a signal listener). */
  private lossListeners: Set<(reason: BatonError) => void> | undefined
  private lossReason: BatonError | undefined
  /** A renewal in flight; release waits for it so they never cross in the store. */
  renewing: Promise<unknown> | undefined
  /**
   * A renewal the store did not answer (a deadline, a dropped connection),
   * with none answered since: it may still run in the store later (a stalled
   * server works through what it was sent) and keep the hold there past the
   * end counted here. See lose().
   */
  renewalInDoubt = false
  private lossTimer: NodeJS.Timeout | undefined

  constructor(
    readonly driver: Driver,
    /** Replaced (not mutated) when a write hold is downgraded to read. */
    public ref: HoldRef,
    grant: Grant,
    private readonly keeper: { forget(hold: Hold): void; checkOpen(): void },
    private readonly unwatch: () => void,
  ) {
    this.ttlMs = grant.ttlMs
    this.confirm(grant.startedAt, grant.ttlMs)
  }

  /** Whose turn it is among this client's flows re-entering the hold (made on first use). */
  get turns(): Turns {
    return (this.turnsMade ??= new Turns())
  }

  /** Held, by the monotonic clock now: a hold past its deadline is lost at this look, whatever its timer says. */
  get active(): boolean {
    this.checkDeadline()
    return this.state === 'held'
  }

  /**
   * Loses the hold now if its deadline has passed. The loss timer alone is
   * not enough: after a pause (SIGSTOP, a GC, a long synchronous step) the
   * client's own overdue timers and I/O run before it, and must not see a
   * lapsed hold as held. Every look at the hold's state comes through here.
   */
  checkDeadline(): void {
    if (this.state === 'held' && monotonicNow() >= this.lapsesAt) expireHold(this)
  }

  get signal(): AbortSignal {
    this.checkDeadline()
    if (!this.abortController) {
      this.abortController = new AbortController()
      if (this.lossReason) this.abortController.abort(this.lossReason)
      checkedOnRead(this.abortController.signal, () => this.checkDeadline())
    }
    return this.abortController.signal
  }

  /** Epoch ms estimate of `deadline`, for display. */
  get expiresAt(): number {
    return Math.round(Date.now() + this.deadline - monotonicNow())
  }

  /** The store confirmed a lease of `ttlMs` counted from no earlier than `startedAt`. */
  confirm(startedAt: number, ttlMs: number): void {
    if (this.state !== 'held') return
    this.deadline = startedAt + ttlMs
    this.lapsesAt = this.deadline - safetyMarginMs(this.ttlMs)
    // Fire before the store lets go, never after it. Whole milliseconds
    // (rounded down, so still early): node keeps one timer list per distinct
    // delay, so holds of one ttl share a list instead of each adding (and on
    // release removing) its own list in the timer heap.
    const lossIn = Math.floor(this.lapsesAt - monotonicNow())
    clearTimeout(this.lossTimer)
    this.lossTimer = setTimeout(expireHold, Math.max(0, lossIn), this)
    this.lossTimer.unref()
  }

  onWake(wake: Wake): void {
    if (wake.type === 'lost') this.lose(wake.reason)
    // A holder is told "retry" only when the store's notices may have been
    // lost (a resubscribe after a reconnect): a forced release's notice may
    // be among them, so look now rather than at the next renewal.
    else if (wake.type === 'retry') this.recheck()
  }

  private rechecking = false

  /** Asks the store whether it still has this hold; loses it at once if not. One at a time. */
  private recheck(): void {
    if (this.state !== 'held' || this.rechecking) return
    this.rechecking = true
    const { name, owner } = this.ref
    this.driver.inspect(name).then(
      (info) => {
        if (this.state !== 'held' || info?.holders.some((h) => h.owner === owner)) return
        this.lose('the store no longer has it (it was taken away while its notices could not reach this client)')
      },
      () => undefined, // the store did not answer: the renewal or the lease's end decides
    ).finally(() => {
      this.rechecking = false
    })
  }

  /**
   * Internal: `listener` is called once if the hold is lost (at once if it
   * already is); never after a release, nor after the returned function
   * removed it.
   */
  onLoss(listener: (reason: BatonError) => void): () => void {
    this.checkDeadline()
    if (this.state === 'lost') listener(this.lossReason!)
    else if (this.state === 'held') {
      const listeners = (this.lossListeners ??= new Set())
      listeners.add(listener)
      return () => listeners.delete(listener)
    }
    return () => {}
  }

  /** `expired`: the lease ran out here (no confirmed renewal), as opposed to the store taking it away. */
  lose(why: string, cause?: unknown, expired = false): void {
    if (this.state !== 'held') return
    this.state = 'lost'
    this.stop()
    const error = leaseLost(this.ref.name, why)
    if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause })
    this.lossReason = error
    this.abortController?.abort(error)
    const listeners = this.lossListeners
    this.lossListeners = undefined
    for (const listener of listeners ?? []) {
      try {
        listener(error)
      } catch {
        // Internal listeners; one that fails must not keep the others (or this timer) from running.
      }
    }
    if (channels.lost.hasSubscribers) channels.lost.publish({ ...this.event(), error, expired } satisfies LostEvent)
    // As a rule no release here: code that has not yet reacted to the signal
    // may still be working, so the store keeps the hold to its end (and lock
    // delay after). But a renewal left unanswered may land late and keep the
    // hold a whole new ttl, nobody's (a hostile review: a stalled Redis ran an
    // extend reported failed). Given back by owner, as a failed attempt is
    // undone (re-sent until answered, behind the renewal); not with a lock
    // delay, whose phantom must outlive an expiry.
    if (expired && this.renewalInDoubt && this.ref.lockDelayMs === 0) this.driver.release(attemptSpecOf(this.ref)).catch(() => {})
  }

  /**
   * Releases the hold in the store. A release that failed (the store did not
   * answer) is tried again by the next call; one that succeeded, or a hold
   * that was lost, makes further calls no-ops.
   */
  /** True if the store still had the hold. */
  async release(): Promise<boolean> {
    this.checkDeadline()
    if (this.state === 'lost' || this.releasedInStore) return false
    this.keeper.checkOpen()
    if (this.state === 'held') {
      this.state = 'released'
      this.stop()
      if (channels.release.hasSubscribers) channels.release.publish(this.event())
    }
    // Calls that overlap may both reach the store: release is idempotent there.
    if (this.renewing) await this.renewing.catch(() => {})
    const held = await this.driver.release(this.ref)
    this.releasedInStore = true
    return held
  }

  private releasedInStore = false

  /**
   * The last write handle went while read handles remain: keep only a read
   * hold, so other readers can join. A store without downgrade keeps the
   * write hold until the read handles are released too.
   */
  async downgrade(): Promise<void> {
    if (this.state !== 'held' || this.ref.mode !== 'write' || !this.driver.downgrade) return
    if (this.renewing) await this.renewing.catch(() => {})
    const read: HoldRef = { ...this.ref, mode: 'read' }
    if (await this.driver.downgrade(this.ref)) this.ref = read
    else this.lose('the store no longer has it (it expired or was taken over)')
  }

  async extend(ttlMs: number): Promise<void> {
    if (!this.active) throw this.notHeldError()
    this.keeper.checkOpen()
    const sentAt = monotonicNow()
    const [result] = await this.driver.extend([this.ref], ttlMs).catch((error: unknown) => {
      this.renewalInDoubt = true
      // Lapsed by the time the failure is read: that is the answer, whatever the transport said.
      if (!this.active) throw this.notHeldError()
      throw error
    })
    this.applyExtend(result!, sentAt, ttlMs)
    // `active`, not the state alone: an answer read after a pause (SIGSTOP, a
    // GC) longer than the lease renewed a hold that has lapsed since, counted
    // from when the call was sent, before the loss timer had its turn. Said
    // 'renewed', its caller would work on for another ttl beside the next holder.
    if (!this.active) throw this.notHeldError()
  }

  applyExtend(result: { status: 'extended'; ttlMs: number } | { status: 'lost' }, sentAt: number, ttlMs: number): void {
    this.renewalInDoubt = false
    if (result.status === 'lost') return this.lose('the store no longer has it (it expired or was taken over)')
    if (this.state === 'lost') {
      // The renewal landed after this client declared the hold lost (and told
      // its user to stop): nobody would release what it renewed, so do it now.
      this.driver.release(this.ref).catch(() => {})
      return
    }
    this.ttlMs = ttlMs
    this.confirm(sentAt, result.ttlMs)
    if (channels.extend.hasSubscribers) channels.extend.publish(this.event())
  }

  notHeldError(): BatonError {
    if (this.state === 'lost') return this.lossReason!
    return new BatonError('NOT_HOLDER', `the hold on "${this.ref.name}" was already released`, { lockName: this.ref.name })
  }

  event(): HoldEvent {
    return { name: this.ref.name, owner: this.ref.owner, token: this.ref.token, mode: this.ref.mode, store: this.driver.store }
  }

  private stop(): void {
    clearTimeout(this.lossTimer)
    this.keeper.forget(this)
    this.unwatch()
    // Flows waiting for their turn to re-enter now contend like anyone else.
    this.turnsMade?.wakeAll()
  }
}

/**
 * Makes reading `signal.aborted` (or `reason`, or `throwIfAborted()`) run
 * `check` first, so a signal taken before a pause tells the truth at the
 * first look after it (an AbortSignal has no other hook: its state changes
 * only when something calls abort()).
 */
export function checkedOnRead(signal: AbortSignal, check: () => void): void {
  Object.defineProperties(signal, {
    aborted: { get: () => { check(); return abortedOf.call(signal) }, configurable: true },
    reason: { get: () => { check(); return reasonOf.call(signal) }, configurable: true },
    throwIfAborted: { value: () => { check(); throwIfAbortedOf.call(signal) }, configurable: true, writable: true },
  })
}

const abortedOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!
const reasonOf = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'reason')!.get! as () => unknown
const throwIfAbortedOf = AbortSignal.prototype.throwIfAborted

function expireHold(hold: Hold): void {
  hold.lose('its lease ran out without a confirmed renewal (raise "ttl", or use autoExtend / using())', undefined, true)
}

/**
 * What users hold. Each reentrant acquire gets its own Lease on the shared
 * Hold; the store hold ends when the last of them is released.
 */
export class Lease implements AsyncDisposable {
  private released = false

  constructor(
    private readonly hold: Hold,
    private readonly clientId: string,
    /** How this handle was asked for; a read handle inside a write scope rides on the write hold. */
    private readonly side: HoldRef['mode'],
    /**
     * This handle's turn among the hold's re-entries; ends with release().
     * The first handle's is made by its first run(): before that no flow can
     * re-enter it.
     */
    private entry?: Reentry,
  ) {
    if (side === 'write') hold.writers += 1
  }

  get name(): string { return this.hold.ref.name }
  get owner(): string { return this.hold.ref.owner }
  /** Fencing token: strictly greater than every token granted before for this name. */
  get token(): bigint { return this.hold.ref.token }
  get mode(): HoldRef['mode'] { return this.hold.ref.mode }
  /** How many permits this hold takes: a semaphore's acquire({ weight }), 1 otherwise. */
  get weight(): number { return this.hold.ref.weight ?? 1 }
  /** Epoch ms at which the last confirmed lease ends (an estimate: the store's clock decides). */
  get expiresAt(): number { return this.hold.expiresAt }
  /** Aborted, with a BatonError('LEASE_LOST'), as soon as the hold is lost. */
  get signal(): AbortSignal { return this.hold.signal }
  /** True until released or lost (by the monotonic clock at the moment it is read). */
  get held(): boolean { return !this.released && this.hold.active }

  /**
   * Internal (multi-lock): `listener` is called once if the hold is lost,
   * with the signal's reason, until this handle is released or the returned
   * function is called: a set re-entering a longer outer hold must leave
   * nothing on it.
   */
  onLoss(listener: (reason: BatonError) => void): () => void {
    if (this.released) return () => {}
    const remove = this.hold.onLoss(listener)
    ;(this.lossRemovers ??= []).push(remove)
    return remove
  }

  private lossRemovers: (() => void)[] | undefined

  /** Milliseconds left of the last confirmed lease, by the monotonic clock. */
  remainingMs(): number {
    if (!this.held) return 0
    return Math.max(0, Math.floor(this.hold.deadline - monotonicNow()))
  }

  /**
   * Renews the lease to `ttl` (a duration, as the lock's `ttl`; default: the
   * lock's ttl). Throws LEASE_LOST if the store let it go, INVALID_ARGUMENT
   * (the hold untouched) for a bad duration.
   */
  async extend(ttl?: Duration): Promise<void> {
    const ttlMs = ttl === undefined ? this.hold.ttlMs : parseTtl(ttl)
    if (this.released) throw this.hold.notHeldError()
    await this.hold.extend(ttlMs)
  }

  /**
   * Releases this handle; the store hold goes when the last reentrant handle
   * does. Idempotent; after a release that failed (BACKEND_UNAVAILABLE), a
   * second call tries the store again.
   */
  async release(): Promise<void> {
    if (this.released) {
      if (this.hold.count === 0) await this.hold.release()
      return
    }
    this.released = true
    for (const remove of this.lossRemovers ?? []) remove()
    this.lossRemovers = undefined
    if (this.entry) this.hold.turns.leave(this.entry)
    this.hold.count -= 1
    if (this.side === 'write') this.hold.writers -= 1
    if (this.hold.count === 0) {
      await this.hold.release()
      return
    }
    if (this.hold.writers === 0) await this.hold.downgrade()
  }

  /**
   * Runs `fn` in a scope where nested acquires of this lock re-enter this
   * hold. Flows `fn` starts side by side take turns re-entering it.
   */
  run<R>(fn: (lease: Lease) => R): R {
    this.entry ??= this.hold.turns.enter(this.hold, undefined)
    return runHolding(scopeKey(this.clientId, this.hold.ref.name), this.entry, () => fn(this))
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release()
  }

  /** Internal: renewals in flight, awaited by using() before it releases. */
  get pendingRenewal(): Promise<unknown> | undefined {
    return this.hold.renewing
  }
}
