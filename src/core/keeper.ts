import type { Driver, HoldRef, LockSpec } from './driver.js'
import { BatonError, invalidArgument } from './errors.js'
import { monotonicNow } from './clock.js'
import { channels } from './events.js'
import { Hold, Lease } from './lease.js'
import { newOwnerId } from './owner.js'
import { heldInFlow } from './reentrancy.js'
import { obtain, WakeRoute } from './waiter.js'
import { Watchdog } from './watchdog.js'

export interface TakeOptions {
  ttlMs: number
  /** 0: one attempt only (tryAcquire). Infinity: until granted or aborted. */
  waitMs: number
  signal?: AbortSignal
  autoExtend: boolean
  reentrant: boolean
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

  /** Key of a lock in reentrancy scopes: holds of another client never match. */
  scopeKey(name: string): string {
    return `${this.clientId}\u0000${name}`
  }

  async take(spec: LockSpec, options: TakeOptions): Promise<Lease | null> {
    if (this.closed) throw new BatonError('INVALID_ARGUMENT', 'this baton client is closed; call connect() again')
    const scopeKey = this.scopeKey(spec.name)
    if (options.reentrant) {
      const inFlow = heldInFlow<Hold>(scopeKey)
      if (inFlow) return this.reenter(inFlow, spec, scopeKey)
    }

    const owner = newOwnerId(this.clientId)
    const route = new WakeRoute()
    const unwatch = this.driver.watch(spec.name, owner, route.deliver)
    const started = monotonicNow()
    let grant
    try {
      grant = await obtain(this.driver, { ...spec, owner, ttlMs: options.ttlMs }, options.waitMs, route, options.signal)
    } catch (error) {
      unwatch()
      throw error
    }
    if (!grant) {
      unwatch()
      return null
    }
    const ref: HoldRef = { ...spec, owner, token: grant.token }
    const hold = new Hold(this.driver, ref, grant, this.watchdog, () => {
      unwatch()
      this.live.delete(owner)
    })
    this.live.set(owner, hold)
    route.to(hold.onWake)
    if (options.autoExtend) this.watchdog.add(hold)
    channels.acquire.publish({ ...hold.event(), waitedMs: monotonicNow() - started, reentered: false, handoff: grant.handoff })
    return new Lease(hold, scopeKey)
  }

  private reenter(hold: Hold, spec: LockSpec, scopeKey: string): Lease {
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
    channels.acquire.publish({ ...hold.event(), waitedMs: 0, reentered: true, handoff: false })
    return new Lease(hold, scopeKey)
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
