import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, ExtendResult, HoldRef,
  ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { limitOf, namesOfPage } from '../../core/list.js'
import { monotonicNow } from '../../core/clock.js'
import { canJoin, describeConflict, weightOf } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import { RELEASED_ELSEWHERE } from '../../core/wake-routes.js'
import { asked, headStarved, heldModes, hasQueuedWriter, holderOf, infoOf, isIdle, retryAfter, type LockState } from './state.js'
import { MemoryStore, type TokenSource } from './store.js'

export type { TokenSource } from './store.js'

/**
 * The embedded store: the reference semantics every other store matches.
 * State lives in maps (state.ts), shared by the clients of one store
 * (store.ts, which also makes the store's own changes: hand-overs, expiry
 * and lock delay on one unref'd timer); this file is one client's calls.
 */

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

/** `memory://` is the process-wide store; `memory://name` a separate named one. */
const stores = new Map<string, MemoryStore>()

export class MemoryDriver implements Driver {
  readonly store = 'memory'
  readonly capabilities = CAPABILITIES
  private readonly locks: Map<string, LockState>
  private readonly watchers: Map<string, (wake: Wake) => void>
  /** Owners this client watches, forgotten at close(). */
  private readonly mine = new Set<string>()

  constructor(private readonly shared: MemoryStore = new MemoryStore()) {
    this.locks = shared.locks
    this.watchers = shared.watchers
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const now = monotonicNow()
    let state = this.locks.get(request.name)
    if (state && isIdle(state, now)) {
      this.shared.drop(request.name, state)
      state = undefined
    }
    if (!state) {
      state = { kind: request.kind, fair: request.fair, permits: request.permits, holders: new Map(), phantoms: [], line: [], lastToken: 0n }
      this.locks.set(request.name, state)
    } else {
      const conflict = describeConflict(state, request)
      if (conflict) return { status: 'conflict', detail: conflict }
    }
    this.shared.promote(request.name, state, now)

    const mine = state.holders.get(request.owner)
    if (mine) return { status: 'granted', token: mine.token, ttlMs: Math.max(0, Math.floor(mine.expiresAt - now)) }

    const queued = state.line.findIndex((w) => w.owner === request.owner)
    const barging = queued < 0 && (!request.fair || state.line.length === 0)
    // A newcomer of a non-fair name may take a free permit while others wait,
    // but never past a head that does not fit yet (a heavy permit, a writer):
    // it would keep the head waiting for as long as light ones keep coming.
    if (barging && canJoin(heldModes(state), asked(request), state.permits, hasQueuedWriter(state)) && !(request.mode === 'permit' && headStarved(state, now))) {
      return this.shared.grant(request.name, state, request, now)
    }
    let place = -1
    if (request.enqueue) {
      const staleAt = now + request.queueTtlMs
      if (queued >= 0) state.line[queued]!.staleAt = staleAt
      else {
        state.line.push({
          owner: request.owner, mode: request.mode, weight: weightOf(request), ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs, staleAt,
          description: request.description, since: Date.now(), value: request.value,
        })
      }
      place = queued >= 0 ? queued : state.line.length - 1
    }
    // Only the head of the line needs to look again when the holders' leases
    // end (in case a hand-over is lost); everyone behind it is served by
    // hand-overs, so it only refreshes its entry: a holder dying with N
    // waiters brings one attempt, not N.
    const retryAfterMs = place > 0 ? Math.max(request.queueTtlMs, retryAfter(state, now)) : retryAfter(state, now)
    return { status: 'busy', retryAfterMs, ...holderOf(state, now) }
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const now = monotonicNow()
    return holds.map((hold) => {
      const state = this.locks.get(hold.name)
      const holder = state?.holders.get(hold.owner)
      if (!state || !holder || holder.expiresAt <= now) return { status: 'lost' }
      holder.expiresAt = now + ttlMs
      this.shared.armExpiry(holder)
      return { status: 'extended', ttlMs }
    })
  }

  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const state = this.locks.get(hold.name)
    if (!state) return false
    const holder = state.holders.get(hold.owner)
    if (holder) {
      this.shared.deadlines.delete(holder)
      state.holders.delete(hold.owner)
      this.shared.changed(hold.name)
      // Released through a client that does not watch this owner: its own client is told (Driver.release).
      if (!this.mine.has(hold.owner)) this.shared.notify(hold.owner, RELEASED_ELSEWHERE)
    } else {
      const queued = state.line.findIndex((w) => w.owner === hold.owner)
      if (queued >= 0) state.line.splice(queued, 1)
    }
    this.shared.promote(hold.name, state, monotonicNow())
    this.shared.dropIfIdle(hold.name, state)
    return holder !== undefined
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const state = this.locks.get(hold.name)
    const holder = state?.holders.get(hold.owner)
    if (!state || !holder || holder.mode !== 'write' || holder.expiresAt <= monotonicNow()) return false
    holder.mode = 'read'
    this.shared.promote(hold.name, state, monotonicNow())
    return true
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    const holder = this.locks.get(hold.name)?.holders.get(hold.owner)
    if (!holder || holder.token !== hold.token || holder.expiresAt <= monotonicNow()) return false
    holder.value = value
    this.shared.changed(hold.name)
    return true
  }

  observe(name: string, onChange: () => void): () => void {
    const observers = this.shared.observers
    let set = observers.get(name)
    if (!set) observers.set(name, (set = new Set()))
    // One entry per call, even for the same function twice.
    const entry = () => onChange()
    set.add(entry)
    return () => {
      set.delete(entry)
      if (set.size === 0 && observers.get(name) === set) observers.delete(name)
    }
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    this.watchers.set(owner, onWake)
    this.mine.add(owner)
    return () => {
      this.mine.delete(owner)
      if (this.watchers.get(owner) === onWake) this.watchers.delete(owner)
    }
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const state = this.locks.get(name)
    const now = monotonicNow()
    if (!state || isIdle(state, now)) return null
    return infoOf(name, state, now)
  }

  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    const now = monotonicNow()
    let left = limitOf(page)
    // Names sorted once per call rather than kept sorted: grants and releases
    // stay O(1), and a page costs one sort of the names plus its own locks.
    for (const name of namesOfPage(this.locks.keys(), prefix, page)) {
      if (left <= 0) return
      const state = this.locks.get(name)
      if (!state || isIdle(state, now)) continue
      left--
      yield infoOf(name, state, now)
    }
  }

  /**
   * Frees the name and grants it to nobody: holders are told they lost it,
   * and the line is dropped with a "retry" to each live waiter, so live ones
   * line up again at once (in the order their retries arrive) while a dead
   * waiter at the head can not be handed the name.
   */
  async forceRelease(name: string): Promise<boolean> {
    const state = this.locks.get(name)
    if (!state) return false
    const held = state.holders.size > 0
    for (const holder of state.holders.values()) {
      this.shared.deadlines.delete(holder)
      this.shared.notify(holder.owner, { type: 'lost', reason: 'released by force (forceRelease)', cause: 'forced' })
    }
    for (const phantom of state.phantoms) this.shared.deadlines.delete(phantom)
    if (held) this.shared.changed(name)
    state.holders.clear()
    state.phantoms.length = 0
    const now = monotonicNow()
    for (const waiter of state.line.splice(0)) {
      if (waiter.staleAt > now) this.shared.notify(waiter.owner, { type: 'retry' })
    }
    this.shared.dropIfIdle(name, state)
    return held
  }

  /**
   * Epoch ms by which every hold of this store, and every lock delay of an
   * expired one, has ended (0 when there are none): what a restart of an
   * embedding with no persisted leases must wait out (the lock server's
   * --data-dir). A scan of the store: for a periodic check, not a hot path.
   */
  latestEnd(): number {
    return this.shared.latestEnd()
  }

  /** Like a network client going away: its holds stay until their ttl runs out. */
  async close(): Promise<void> {
    for (const owner of this.mine) this.watchers.delete(owner)
    this.mine.clear()
  }
}

export const createMemoryDriver: DriverFactory = async (url: StoreUrl) => {
  const storeName = url.hosts[0]?.host ?? ''
  let shared = stores.get(storeName)
  if (!shared) {
    shared = new MemoryStore()
    stores.set(storeName, shared)
  }
  return new MemoryDriver(shared)
}

/** A private store (not registered under any memory:// name) with its own token source. */
export function createPrivateMemoryDriver(nextToken?: TokenSource): MemoryDriver {
  return new MemoryDriver(new MemoryStore(nextToken))
}
