import type { Wake } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { canJoin, weightOf } from '../../core/compat.js'
import { Deadlines } from './deadlines.js'
import { heldModes, isIdle, type Grantee, type Holder, type LockState } from './state.js'

/**
 * Where the store-wide token counter goes next, for an embedding that must
 * keep tokens increasing across restarts (the lock server's --data-dir): it
 * returns a token greater than `last`, the last token this store granted.
 */
export type TokenSource = (last: bigint) => bigint

/**
 * The state of one in-process store, shared by every client connected to it,
 * and every change the store makes by itself or for any client: grants,
 * hand-overs to the line, expiry and lock delay, wake-ups and observer
 * notices, dropping idle names. What an end does touches only this shared
 * state, so the store's one timer runs it whichever client armed it.
 *
 * Bounded state: a name's state goes as soon as nobody holds or awaits it
 * (a line entry only exists behind a hold or a lock-delay phantom, and every
 * end of those drops the name once idle), well within any `fenceTtl`. Fencing
 * needs no per-name counter: one store-wide counter numbers every grant, so
 * tokens strictly increase for every name (they are not consecutive per name)
 * for as long as the process lives, which is as long as this store does.
 */
export class MemoryStore {
  readonly locks = new Map<string, LockState>()
  /** The last token granted, for any name. */
  lastToken = 0n
  /** Wake-up routes by owner (owners are unique across clients). */
  readonly watchers = new Map<string, (wake: Wake) => void>()
  /** Election observers by name (Driver.observe): told after every change of a name's holders. */
  readonly observers = new Map<string, Set<() => void>>()
  /** Ends of holds and of lock-delay phantoms, under one timer. */
  readonly deadlines: Deadlines<Holder>

  constructor(readonly nextToken?: TokenSource) {
    this.deadlines = new Deadlines((holder) => (holder.phantom ? this.endPhantom(holder) : this.expire(holder)))
  }

  /** Hands the name to the head of the line while the head fits (several readers or permits at once). */
  promote(name: string, state: LockState, now: number): void {
    while (state.line.length > 0) {
      const head = state.line[0]!
      if (head.staleAt <= now) {
        state.line.shift()
        continue
      }
      if (!canJoin(heldModes(state), head, state.permits, false)) return
      state.line.shift()
      const { token, ttlMs } = this.grant(name, state, head, now)
      this.notify(head.owner, { type: 'granted', token, ttlMs })
    }
  }

  grant(name: string, state: LockState, who: Grantee, now: number): { status: 'granted'; token: bigint; ttlMs: number } {
    const token = this.nextToken ? this.nextToken(this.lastToken) : this.lastToken + 1n
    this.lastToken = token
    state.lastToken = token
    const holder: Holder = {
      owner: who.owner, token, mode: who.mode, weight: weightOf(who), expiresAt: now + who.ttlMs, lockDelayMs: who.lockDelayMs,
      name, state, phantom: false, fireAt: 0, heapIndex: -1, description: who.description, since: Date.now(), value: who.value,
    }
    state.holders.set(who.owner, holder)
    this.changed(name)
    this.armExpiry(holder)
    return { status: 'granted', token, ttlMs: who.ttlMs }
  }

  /** A millisecond after the lease's end, as the store's own clock sees it. */
  armExpiry(holder: Holder): void {
    this.deadlines.set(holder, holder.expiresAt + 1)
  }

  private expire(holder: Holder): void {
    const { name, state } = holder
    if (state.holders.get(holder.owner) !== holder) return
    const now = monotonicNow()
    if (holder.expiresAt > now) return this.armExpiry(holder)
    state.holders.delete(holder.owner)
    this.changed(name)
    if (holder.lockDelayMs > 0) {
      // Lock delay: the expired hold keeps its slot, as a phantom, a while longer.
      const phantom: Holder = { ...holder, expiresAt: now + holder.lockDelayMs, phantom: true, heapIndex: -1 }
      state.phantoms.push(phantom)
      this.deadlines.set(phantom, phantom.expiresAt + 1)
    }
    this.promote(name, state, now)
    this.dropIfIdle(name, state)
  }

  private endPhantom(phantom: Holder): void {
    const { name, state } = phantom
    const at = state.phantoms.indexOf(phantom)
    if (at < 0) return
    state.phantoms.splice(at, 1)
    this.promote(name, state, monotonicNow())
    this.dropIfIdle(name, state)
  }

  /** Tells the name's election observers, if any, after the current operation. */
  changed(name: string): void {
    const observers = this.observers.get(name)
    if (observers) for (const onChange of observers) queueMicrotask(onChange)
  }

  notify(owner: string, wake: Wake): void {
    const watcher = this.watchers.get(owner)
    if (watcher) queueMicrotask(() => watcher(wake))
  }

  dropIfIdle(name: string, state: LockState): void {
    if (isIdle(state, monotonicNow())) this.drop(name, state)
  }

  drop(name: string, state: LockState): void {
    for (const holder of [...state.holders.values(), ...state.phantoms]) this.deadlines.delete(holder)
    if (this.locks.get(name) === state) this.locks.delete(name)
  }

  /** See MemoryDriver.latestEnd. */
  latestEnd(): number {
    const now = monotonicNow()
    let latest = -Infinity
    for (const state of this.locks.values()) {
      for (const holder of state.holders.values()) if (holder.expiresAt > latest) latest = holder.expiresAt
      for (const phantom of state.phantoms) if (phantom.expiresAt > latest) latest = phantom.expiresAt
    }
    return latest > now ? Math.ceil(Date.now() + latest - now) : 0
  }
}
