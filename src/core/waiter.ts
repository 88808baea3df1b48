import type { AcquireRequest, AcquireResult, AttemptSpec, Driver, HolderSummary, LockSpec, Wake } from './driver.js'
import { aborted, BatonError, invalidArgument, lockTimeout } from './errors.js'
import { monotonicNow } from './clock.js'
import { safetyMarginMs } from './margin.js'
import { channels, type GiveUpEvent, type WaitEvent } from './events.js'

/** A grant, with the monotonic instant from which its ttl surely runs (or later). */
export interface Grant {
  readonly token: bigint
  readonly ttlMs: number
  readonly startedAt: number
  readonly handoff: boolean
  /** Attempts sent to the store, this grant's included. */
  readonly attempts: number
}

/**
 * Routes a store's wake-ups for one owner. Until the hold exists they are
 * kept, in order, for the waiting loop (which `onArrive` nudges); `to(hold)`
 * then replays what is left and sends the rest straight to the hold, so no
 * wake-up between the waiter and the hold is ever dropped.
 */
export class WakeRoute {
  /** Wake-ups nobody has handled yet (a hand-over can overtake the acquire reply). */
  pending: Wake[] | undefined
  /** `lost` wake-ups seen so far: a grant learnt before the latest one may be gone. */
  losses = 0
  /** Set by the waiting loop while it sleeps. */
  onArrive: (() => void) | undefined
  private hold: { onWake(wake: Wake): void } | undefined
  readonly deliver = (wake: Wake): void => {
    if (wake.type === 'lost') this.losses++
    if (this.hold) return this.hold.onWake(wake)
    ;(this.pending ??= []).push(wake)
    this.onArrive?.()
  }
  to(hold: { onWake(wake: Wake): void }): void {
    this.hold = hold
    const pending = this.take()
    if (pending) for (const wake of pending) hold.onWake(wake)
  }
  take(): Wake[] | undefined {
    const pending = this.pending
    this.pending = undefined
    return pending
  }
}

export type AttemptRequest = Mutable<AcquireRequest>

/**
 * The one waiting engine. Tries once; if busy and allowed to wait, joins the
 * store's line and sleeps until the store wakes this owner (a hand-over or a
 * "try again"), the store's own retry hint is due, the line entry needs
 * refreshing, the deadline passes or the signal aborts. No fixed-interval
 * polling: without wake-ups it retries only when the store says it could succeed.
 *
 * When `waitMs` is 0 and the lock is busy: null if `nullIfBusy` (tryAcquire),
 * else LOCK_TIMEOUT (`acquire({ wait: 0 })`, whose type promises a Lease).
 */
export async function obtain(
  driver: Driver, attempt: AttemptRequest, waitMs: number, route: WakeRoute, signal: AbortSignal | undefined,
  nullIfBusy: boolean,
  /** Aborted by the client's close(), with the error to end the wait with. */
  closing: AbortSignal,
  /** Internal (lock server): called once when the owner is in the store's line. */
  onWaiting?: (owner: string) => void,
): Promise<Grant | null> {
  // One timer for the whole wait (none for a single attempt or an endless
  // wait): an attempt in flight is never waited on past the deadline, even
  // when the store does not answer (a frozen server).
  const pastDeadline = waitMs > 0 && Number.isFinite(waitMs) ? new Deadline(waitMs) : undefined
  try {
    return await attempts(driver, attempt, waitMs, route, signal, nullIfBusy, closing, onWaiting, pastDeadline)
  } finally {
    pastDeadline?.clear()
  }
}

/** The attempts of obtain(), each bounded by `pastDeadline` when the wait has one. */
async function attempts(
  driver: Driver, attempt: AttemptRequest, waitMs: number, route: WakeRoute, signal: AbortSignal | undefined,
  nullIfBusy: boolean, closing: AbortSignal, onWaiting: ((owner: string) => void) | undefined, pastDeadline: Deadline | undefined,
): Promise<Grant | null> {
  const request = attempt // the same object serves every attempt of this owner
  const started = monotonicNow()
  const deadline = started + waitMs
  if (signal?.aborted) throw aborted(request.name, signal.reason)
  attempt.enqueue = waitMs > 0
  attempt.queueTtlMs = Math.min(attempt.ttlMs, waitMs + 50)
  attempt.retry = false

  let announced = false
  /**
   * When the last attempt answered "busy" was sent. A hand-over can only
   * happen after the store ran that attempt (an owner already handed the lock
   * is answered `granted`), so its lease surely runs from no earlier than this.
   * Line refreshes keep it at most about queueTtl/3 <= ttl/3 old.
   */
  let busySentAt = started
  /** The holder the latest answer that named one named: said when the wait ends with no fresher word. */
  let named: HolderSummary | undefined
  /** LOCK_TIMEOUT naming who holds the name: `holder` (the last answer's), else a last read, else `named`. */
  const timeout = async (holder: HolderSummary | undefined, lastRead = holder ? undefined : holderNow(driver, request.name, request.owner)) =>
    lockTimeout(request.name, waitMs === 0 ? 0 : Math.round(monotonicNow() - started), holder ?? (await lastRead) ?? named)
  /** Attempts sent to the store so far (the acquire and give-up events report it). */
  let sent = 0
  for (;;) {
    const sentAt = monotonicNow()
    const lossesBefore = route.losses
    sent++
    const reply = driver.acquire(attempt)
    const result = await untilStopped(reply, signal, pastDeadline).catch((error: unknown) => {
      // The attempt may still reach the store after we gave up on it (a frozen
      // server answers late): undo it in order, so no ghost holds the lock.
      driver.release(attemptSpecOf(request)).catch(() => {})
      throw error
    })
    if (result === STOPPED || result === PAST_DEADLINE) {
      // Aborted or out of time with the attempt in flight: answer now, and undo whatever
      // the attempt does in the store (a grant, a line entry) once it has landed.
      const undo = () => driver.release(attemptSpecOf(request)).catch(() => {})
      let late: AcquireResult | undefined
      reply.then((answer) => { late = answer; return undo() }, undo)
      if (result === STOPPED) throw stoppedError(driver, request, aborted(request.name, signal!.reason), sent)
      // Out of time: a healthy store answers within moments, so let the attempt
      // land (bounded) and leave the line after it; the caller then sees no line
      // entry of its own. A frozen store is not waited on past the grace. Who
      // holds the name is read meanwhile, in case the attempt does not say.
      const lastRead = holderNow(driver, request.name, request.owner)
      await landedWithin(reply, Math.min(waitMs, LATE_ATTEMPT_GRACE_MS))
      await undo()
      const answered = late as AcquireResult | undefined
      throw stoppedError(driver, request, await timeout(answered?.status === 'busy' ? answered.holder : undefined, lastRead), sent)
    }
    // Closed while the attempt was out: undo whatever it did in the store.
    if (closing.aborted) return giveUp(driver, request, closing.reason as BatonError, sent)
    if (result.status === 'granted') {
      if (route.losses === lossesBefore) {
        if (!deadOnArrival(sentAt, result.ttlMs)) return { token: result.token, ttlMs: result.ttlMs, startedAt: sentAt, handoff: false, attempts: sent }
        // The answer came later than the lease it grants (a stalled event
        // loop): the store may have given the name to someone else since.
        // Never hand out a hold that is over; ask again while time is left.
        if (monotonicNow() >= deadline) {
          if (nullIfBusy) { await driver.release(attemptSpecOf(request)).catch(() => {}); return null }
          return giveUp(driver, request, await timeout(undefined), sent)
        }
        // Give the spent hold back (nobody used it) before asking again: the
        // idempotent re-attempt would only confirm it, with what is left of
        // it, as fast as the store answers (on memory:// without ever letting
        // its expiry timer run) until it ran out.
        await driver.release(attemptSpecOf(request)).catch(() => {})
      }
      // A `lost` came while the attempt was in flight: the grant it reports may
      // be the hold that was just taken away. Ask again; the attempt is
      // idempotent, so a hold that still exists is simply confirmed.
      // The losses seen so far ended that hold and have done their part: kept
      // pending, they would reach the hold the next attempt gets (a new grant
      // when the name was freed by force) and end it here while the store
      // keeps it, nobody's, for its ttl. A loss during the next attempt's
      // flight sends it round again.
      if (route.pending) route.pending = route.pending.filter((wake) => wake.type !== 'lost')
      attempt.retry = true
      continue
    }
    if (result.status === 'conflict') throw invalidArgument(result.detail)
    busySentAt = sentAt
    named = result.holder ?? named
    // A hand-over whose wake-up came in while this attempt was out may be
    // older than the attempt: after an event-loop stall (GC, SIGSTOP) a
    // hand-over that has meanwhile expired, and been granted to someone else,
    // is read from the socket only now, and counting its lease from this
    // attempt would make a dead hold look alive. Only a wake-up that arrives
    // after a busy answer surely follows the attempt; for this one, ask again
    // at once: the attempt is idempotent, so a hand-over that still stands is
    // confirmed with its remaining lease, and a gone one answers busy.
    if (route.pending?.some((wake) => wake.type === 'granted') && waitMs > 0) {
      route.take()
      attempt.retry = true
      continue
    }
    if (waitMs === 0) {
      if (nullIfBusy) return null
      throw await timeout(result.holder)
    }
    if (!announced) {
      announced = true
      onWaiting?.(request.owner)
      if (channels.wait.hasSubscribers) {
        channels.wait.publish({ name: request.name, owner: request.owner, mode: request.mode, store: driver.store } satisfies WaitEvent)
      }
    }

    // Sleep until something can have changed.
    const stop = stopReason(request, signal, closing)
    if (stop) return giveUp(driver, request, stop, sent)
    const now = monotonicNow()
    if (now >= deadline) return giveUp(driver, request, await timeout(result.holder), sent)
    // The line entry is refreshed every queueTtl/3 or a little sooner: a jitter
    // keeps waiters that joined together from refreshing in lockstep.
    const refreshMs = (attempt.queueTtlMs / 3) * (1 - Math.random() / 5)
    const sleepMs = Math.max(1, Math.min(result.retryAfterMs, refreshMs, deadline - now))
    let timer: NodeJS.Timeout | undefined
    let wake!: () => void
    await new Promise<void>((resolve) => {
      wake = () => resolve()
      if (route.pending?.length) return resolve()
      route.onArrive = wake
      timer = setTimeout(wake, sleepMs)
      signal?.addEventListener('abort', wake, { once: true })
      closing.addEventListener('abort', wake, { once: true })
    })
    route.onArrive = undefined
    clearTimeout(timer)
    signal?.removeEventListener('abort', wake)
    closing.removeEventListener('abort', wake)

    const granted = staleHandover(grantIn(route.take()), request, result.holder)
    const stopNow = stopReason(request, signal, closing)
    if (stopNow) return giveUp(driver, request, stopNow, sent)
    // Counted from before the store granted, never from when the wake-up was
    // processed (an event-loop stall would push the deadline past the store's).
    if (granted && !deadOnArrival(busySentAt, granted.ttlMs)) return { token: granted.token, ttlMs: granted.ttlMs, startedAt: busySentAt, handoff: true, attempts: sent }
    // (A hand-over learnt too late to use is confirmed or refused by the next attempt.)
    const left = deadline - monotonicNow()
    if (left <= 0) return giveUp(driver, request, await timeout(result.holder), sent)
    attempt.retry = true
    attempt.queueTtlMs = Math.max(1, Math.min(request.ttlMs, left + 50))
  }
}

const PAST_DEADLINE = Symbol('past deadline')
/** How long an attempt still in flight at the deadline may take to land before the wait gives up on it. */
const LATE_ATTEMPT_GRACE_MS = 1000

/**
 * Who (other than `owner`) holds `name` now, by one read of the store;
 * undefined if nobody, or if the store does not answer within the client's
 * command timeout (its own bound on every command, so a busy machine's slow
 * answer still counts and a frozen store's is not waited for without end).
 */
function holderNow(driver: Driver, name: string, owner: string): Promise<HolderSummary | undefined> {
  return driver.inspect(name).then((info) => info?.holders.find((h) => h.owner !== owner), () => undefined)
}

/** Resolves once `work` settled, or after `ms`, whichever is first. */
async function landedWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([work.then(() => {}, () => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/** A wait's end: one plain timer (no AbortController); one attempt at a time listens. */
class Deadline {
  passed = false
  onPass: (() => void) | undefined
  private readonly timer: NodeJS.Timeout
  constructor(waitMs: number) {
    this.timer = setTimeout(() => {
      this.passed = true
      this.onPass?.()
    }, waitMs)
  }
  clear(): void {
    clearTimeout(this.timer)
  }
}

export type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** The request as "an owner that may be waiting or may have been handed the lock": no token. */
/**
 * An owner's attempt (or hold) as its undo names it: by owner, without a
 * token (the attempt's fate is unknown: a token of 0 would match no hold),
 * with the attempt's ttl where known (see AttemptSpec).
 */
export function attemptSpecOf(request: LockSpec & { readonly owner: string; readonly ttlMs?: number }): AttemptSpec {
  return {
    name: request.name, kind: request.kind, mode: request.mode, fair: request.fair,
    permits: request.permits, lockDelayMs: request.lockDelayMs, owner: request.owner,
    ...(request.weight !== undefined ? { weight: request.weight } : {}),
    ...(request.ttlMs !== undefined ? { ttlMs: request.ttlMs } : {}),
  }
}

/**
 * The hand-over these wake-ups leave this owner holding, if any: a `lost`
 * (sent only to holders) ends every grant that came before it.
 */
/**
 * A hand-over the last busy answer already outlived: that answer named
 * another exclusive holder with a later token, so the store granted the name
 * again after ours ended. A store whose wake-ups wait in the store until read
 * (MySQL's wake-up rows, read by a poll) can deliver a hand-over made while
 * this process stood still (SIGSTOP) after an attempt sent once it resumed:
 * counting that hand-over's lease from the attempt would make a dead hold
 * look alive beside its successor. Such a wake-up is dropped; the next
 * attempt asks the store (idempotent), as for any hand-over learnt too late.
 */
function staleHandover(
  granted: Extract<Wake, { type: 'granted' }> | undefined, request: AttemptRequest, holder: HolderSummary | undefined,
): Extract<Wake, { type: 'granted' }> | undefined {
  if (!granted || !holder || holder.owner === request.owner) return granted
  const exclusive = (mode: string) => mode === 'exclusive' || mode === 'write'
  if ((exclusive(request.mode) || exclusive(holder.mode)) && holder.token > granted.token) return undefined
  return granted
}

function grantIn(wakes: Wake[] | undefined): Extract<Wake, { type: 'granted' }> | undefined {
  let granted: Extract<Wake, { type: 'granted' }> | undefined
  for (const wake of wakes ?? []) {
    if (wake.type === 'granted') granted = wake
    else if (wake.type === 'lost') granted = undefined
  }
  return granted
}

/**
 * Leaves the line at once so the next waiter is not held up. If a hand-over
 * raced with giving up, the release passes the lock on to the next in line.
 */
async function giveUp(driver: Driver, request: AttemptRequest, error: BatonError, attempts: number): Promise<never> {
  await driver.release(attemptSpecOf(request)).catch(() => {
    // The line entry then expires by itself within its queue ttl.
  })
  throw stoppedError(driver, request, error, attempts)
}

/** A grant whose lease, counted from `startedAt`, is already within its safety margin of the end. */
function deadOnArrival(startedAt: number, ttlMs: number): boolean {
  return startedAt + ttlMs - safetyMarginMs(ttlMs) <= monotonicNow()
}

/** Why waiting must end now (the client closed, the signal aborted), if it must. */
function stopReason(request: AttemptRequest, signal: AbortSignal | undefined, closing: AbortSignal): BatonError | undefined {
  if (closing.aborted) return closing.reason as BatonError
  return signal?.aborted ? aborted(request.name, signal.reason) : undefined
}

/** Announces that this owner stops waiting, and returns `error` to throw. */
function stoppedError(driver: Driver, request: AttemptRequest, error: BatonError, attempts: number): BatonError {
  if (channels.giveUp.hasSubscribers) {
    channels.giveUp.publish({
      name: request.name, owner: request.owner, mode: request.mode, store: driver.store, code: error.code, kind: request.kind, fair: request.fair, attempts,
    } satisfies GiveUpEvent)
  }
  return error
}

const STOPPED = Symbol('stopped')

/**
 * `work`'s outcome, or STOPPED as soon as `signal` aborts (at once if it
 * already has), or PAST_DEADLINE once `deadline` passes, whichever is first.
 */
function untilStopped<T>(
  work: Promise<T>, signal: AbortSignal | undefined, deadline: Deadline | undefined,
): Promise<T | typeof STOPPED | typeof PAST_DEADLINE> {
  if (!signal && !deadline) return work
  if (signal?.aborted) return Promise.resolve(STOPPED)
  if (deadline?.passed) return Promise.resolve(PAST_DEADLINE)
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(STOPPED)
    signal?.addEventListener('abort', onAbort, { once: true })
    if (deadline) deadline.onPass = () => resolve(PAST_DEADLINE)
    const settle = () => {
      signal?.removeEventListener('abort', onAbort)
      if (deadline) deadline.onPass = undefined
    }
    work.then(
      (value) => { settle(); resolve(value) },
      (error: unknown) => { settle(); reject(error) },
    )
  })
}
