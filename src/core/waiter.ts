import type { AcquireRequest, Driver, LockSpec, Wake } from './driver.js'
import { aborted, BatonError, invalidArgument, lockTimeout } from './errors.js'
import { monotonicNow } from './clock.js'
import { channels, type WaitEvent } from './events.js'

/** A grant, with the monotonic instant from which its ttl surely runs (or later). */
export interface Grant {
  readonly token: bigint
  readonly ttlMs: number
  readonly startedAt: number
  readonly handoff: boolean
}

/**
 * Routes a store's wake-ups for one owner: to the waiting loop while it waits,
 * then to the hold (for loss notices) once granted.
 */
export class WakeRoute {
  /** Wake-ups that came while nobody listened (a hand-over can overtake the acquire reply). */
  pending: Wake[] | undefined
  private handler: { onWake(wake: Wake): void } | undefined
  readonly deliver = (wake: Wake): void => {
    if (this.handler) this.handler.onWake(wake)
    else (this.pending ??= []).push(wake)
  }
  to(handler: { onWake(wake: Wake): void }): void {
    this.handler = handler
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
 * Returns null when `waitMs` is 0 and the lock is busy (tryAcquire).
 */
export async function obtain(
  driver: Driver, attempt: AttemptRequest, waitMs: number, route: WakeRoute, signal?: AbortSignal, onWaiting?: () => void,
): Promise<Grant | null> {
  const request = attempt // the same object serves every attempt of this owner
  const started = monotonicNow()
  const deadline = started + waitMs
  if (signal?.aborted) throw aborted(request.name, signal.reason)
  attempt.enqueue = waitMs > 0
  attempt.queueTtlMs = Math.min(attempt.ttlMs, waitMs + 50)
  attempt.retry = false

  let announced = false
  let nudge: (() => void) | undefined
  for (;;) {
    const sentAt = monotonicNow()
    const result = await driver.acquire(attempt).catch((error: unknown) => {
      // The attempt may still reach the store after we gave up on it (a frozen
      // server answers late): undo it in order, so no ghost holds the lock.
      driver.release(waiterOf(request)).catch(() => {})
      throw error
    })
    if (result.status === 'granted') {
      return { token: result.token, ttlMs: result.ttlMs, startedAt: sentAt, handoff: false }
    }
    if (result.status === 'conflict') throw invalidArgument(result.detail)
    if (waitMs === 0) return null
    if (!announced) {
      announced = true
      onWaiting?.()
      if (channels.wait.hasSubscribers) {
        channels.wait.publish({ name: request.name, owner: request.owner, mode: request.mode, store: driver.store } satisfies WaitEvent)
      }
      route.to({
        onWake(wake) {
          ;(route.pending ??= []).push(wake)
          nudge?.()
        },
      })
    }

    // Sleep until something can have changed.
    const now = monotonicNow()
    if (now >= deadline) return giveUp(driver, request, lockTimeout(request.name, Math.round(now - started), result.holder))
    const sleepMs = Math.max(1, Math.min(result.retryAfterMs, attempt.queueTtlMs / 3, deadline - now))
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    await new Promise<void>((resolve) => {
      if (route.pending?.length) return resolve()
      nudge = resolve
      timer = setTimeout(resolve, sleepMs)
      if (signal) {
        onAbort = resolve
        signal.addEventListener('abort', onAbort, { once: true })
      }
    })
    nudge = undefined
    clearTimeout(timer)
    if (onAbort) signal?.removeEventListener('abort', onAbort)

    const granted = takeGrant(route.pending)
    route.pending = undefined
    if (granted) return { token: granted.token, ttlMs: granted.ttlMs, startedAt: monotonicNow(), handoff: true }
    if (signal?.aborted) return giveUp(driver, request, aborted(request.name, signal.reason))
    const left = deadline - monotonicNow()
    if (left <= 0) return giveUp(driver, request, lockTimeout(request.name, Math.round(waitMs - left), result.holder))
    attempt.retry = true
    attempt.queueTtlMs = Math.max(1, Math.min(request.ttlMs, left + 50))
  }
}

export type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** The request as "an owner that may be waiting or may have been handed the lock": no token. */
function waiterOf(request: AttemptRequest): LockSpec & { owner: string } {
  return {
    name: request.name, kind: request.kind, mode: request.mode, fair: request.fair,
    permits: request.permits, lockDelayMs: request.lockDelayMs, owner: request.owner,
  }
}

function takeGrant(wakes: Wake[] | undefined): Extract<Wake, { type: 'granted' }> | undefined {
  return wakes?.find((w): w is Extract<Wake, { type: 'granted' }> => w.type === 'granted')
}

/**
 * Leaves the line at once so the next waiter is not held up. If a hand-over
 * raced with giving up, the release passes the lock on to the next in line.
 */
async function giveUp(driver: Driver, request: AttemptRequest, error: BatonError): Promise<never> {
  channels.giveUp.publish({ name: request.name, owner: request.owner, mode: request.mode, store: driver.store, code: error.code })
  await driver.release(waiterOf(request)).catch(() => {
    // The line entry then expires by itself within its queue ttl.
  })
  throw error
}
