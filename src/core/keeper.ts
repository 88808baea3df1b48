import type { Driver, LockSpec } from './driver.js'
import { BatonError, invalidArgument } from './errors.js'
import { monotonicNow } from './clock.js'
import { channels } from './events.js'
import { Hold, Lease } from './lease.js'
import { newOwnerId } from './owner.js'
import { heldInFlow } from './reentrancy.js'
import { obtain, WakeRoute, type AttemptRequest } from './waiter.js'
import { Watchdog } from './watchdog.js'

export interface TakeOptions {
  ttlMs: number
  /** 0: one attempt only (tryAcquire). Infinity: until granted or aborted. */
  waitMs: number
  signal: AbortSignal | undefined
  autoExtend: boolean
  reentrant: boolean
  /** When busy and `waitMs` is 0: resolve null (tryAcquire) instead of LOCK_TIMEOUT. */
  nullIfBusy: boolean
}

/**
 * Turns driver attempts into Leases for one client: reentrancy first, then the
 * waiting engine, then a Hold wired to the watchdog and to store wake-ups.
 */
export class Keeper {
  readonly watchdog = new Watchdog()
  /** Live holds of this client by owner, for reentrancy counts in inspect(). */
  private readonly live = new Map<string, Hold>()
  private closed = false

  constructor(readonly driver: Driver, readonly clientId: string) {}

  async take(spec: LockSpec, options: TakeOptions): Promise<Lease | null> {
    if (this.closed) throw new BatonError('INVALID_ARGUMENT', 'this baton client is closed; call connect() again')
    if (options.reentrant) {
      const inFlow = heldInFlow<Hold>(this.clientId, spec.name)
      if (inFlow) return this.reenter(inFlow, spec)
    }

    const owner = newOwnerId(this.clientId)
    const route = new WakeRoute()
    const unwatch = this.driver.watch(spec.name, owner, route.deliver)
    const started = monotonicNow()
    // One object serves as every attempt's request and then as the hold's ref.
    // Spelled out, not spread: V8 turns `{ ...spec, more }` into a slow
    // dictionary object, which cost more than the rest of an acquire.
    const request: AttemptRequest & { token: bigint } = {
      name: spec.name, kind: spec.kind, mode: spec.mode, fair: spec.fair, permits: spec.permits,
      lockDelayMs: spec.lockDelayMs, owner, ttlMs: options.ttlMs, enqueue: false, queueTtlMs: 0, retry: false, token: 0n,
    }
    let grant
    try {
      grant = await obtain(this.driver, request, options.waitMs, route, options.signal, options.nullIfBusy)
    } catch (error) {
      unwatch()
      throw error
    }
    if (!grant) {
      unwatch()
      return null
    }
    request.token = grant.token
    const hold = new Hold(this.driver, request, grant, this, unwatch)
    this.live.set(owner, hold)
    route.to(hold)
    if (options.autoExtend) this.watchdog.add(hold)
    if (channels.acquire.hasSubscribers) {
      channels.acquire.publish({ ...hold.event(), waitedMs: monotonicNow() - started, reentered: false, handoff: grant.handoff })
    }
    return new Lease(hold, this.clientId, spec.mode)
  }

  /** Called by a hold when it ends (released or lost). */
  forget(hold: Hold): void {
    this.watchdog.remove(hold)
    this.live.delete(hold.ref.owner)
  }

  private reenter(hold: Hold, spec: LockSpec): Lease {
    const held = hold.ref
    const fits =
      held.mode === spec.mode || (held.mode === 'write' && spec.mode === 'read')
    if (!fits) {
      throw invalidArgument(
        `cannot take "${spec.name}" as ${spec.mode} while this flow holds it as ${held.mode}: ` +
          (held.mode === 'read' && spec.mode === 'write'
            ? 'upgrading a read lock to a write lock would deadlock; release the read lock first'
            : 'release the held lock first'),
      )
    }
    hold.count += 1
    if (channels.acquire.hasSubscribers) channels.acquire.publish({ ...hold.event(), waitedMs: 0, reentered: true, handoff: false })
    return new Lease(hold, this.clientId, spec.mode)
  }

  /** Reentrant handles on `owner`'s hold when this client has it, else 1. */
  countOf(owner: string): number {
    const hold = this.live.get(owner)
    return hold?.active ? hold.count : 1
  }

  async close(): Promise<void> {
    this.closed = true
    this.watchdog.close()
  }
}
