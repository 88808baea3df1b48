import type { Driver, ExtendResult, HoldRef, LockSpec } from './driver.js'
import { BatonError, invalidArgument } from './errors.js'
import { monotonicNow } from './clock.js'
import { channels } from './events.js'
import { Hold, Lease } from './lease.js'
import { newOwnerId, newSecretOwnerId } from './owner.js'
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
  /** Internal (lock server): called once when the owner is in the store's line. */
  onWaiting?: () => void
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
  /**
   * Internal, for the lock server: owners carry 128 random bits, because the
   * server hands them out inside lease ids and a guessable owner would let
   * anyone extend or release another's hold.
   */
  secretOwners = false

  constructor(readonly driver: Driver, readonly clientId: string) {}

  async take(spec: LockSpec, options: TakeOptions): Promise<Lease | null> {
    if (this.closed) throw new BatonError('INVALID_ARGUMENT', 'this baton client is closed; call connect() again')
    if (options.reentrant) {
      const inFlow = heldInFlow<Hold>(this.clientId, spec.name)
      if (inFlow) return this.reenter(inFlow, spec)
    }

    const owner = this.secretOwners ? newSecretOwnerId(this.clientId) : newOwnerId(this.clientId)
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
      grant = await obtain(this.driver, request, options.waitMs, route, options.signal, options.onWaiting)
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

  /** Live holds of this client. */
  get holdCount(): number {
    return this.live.size
  }

  /** Reentrant handles on `owner`'s hold when this client has it, else 1. */
  countOf(owner: string): number {
    const hold = this.live.get(owner)
    return hold?.active ? hold.count : 1
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
    const hold = this.localHold(ref)
    if (hold) return hold.release()
    const held = await this.driver.release(ref)
    if (held && channels.release.hasSubscribers) channels.release.publish(this.event(ref))
    return held
  }

  /** Turns a write ref into a read ref of the same token; false if the hold is gone. */
  async downgradeRef(ref: HoldRef): Promise<boolean> {
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

  async close(): Promise<void> {
    this.closed = true
    this.watchdog.close()
  }
}
