import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, ExtendResult, HoldMode, HoldRef,
  HolderSummary, ListPage, LockInfo, LockKind, LockSpec, Wake,
} from '../../core/driver.js'
import { limitOf, namesOfPage } from '../../core/list.js'
import { monotonicNow } from '../../core/clock.js'
import { Deadlines, type Deadline } from './deadlines.js'
import { canJoin, describeConflict, weightField, weightOf, type Held } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'
import { RELEASED_ELSEWHERE } from '../../core/wake-routes.js'

/**
 * The embedded store: the reference semantics every other store matches.
 * State lives in maps; expiry and lock delay run on one (unref'd) timer, and a
 * release or expiry hands the lock to the head of the line at once.
 */
interface Holder extends Deadline {
  owner: string
  token: bigint
  mode: HoldMode
  /** Permits this hold takes (LockSpec.weight); a phantom keeps it. */
  weight: number
  /** Monotonic. For a phantom: when its lock delay ends. */
  expiresAt: number
  lockDelayMs: number
  /** Where it is held, for the store-wide expiry heap. */
  name: string
  state: LockState
  /** A lock-delay phantom of an expired hold, not a live one. */
  phantom: boolean
  /** Who took it (AcquireRequest.description) and when, epoch ms: for inspect. */
  description: string | undefined
  since: number
  /** A leader's announced value (AcquireRequest.value, then proclaim). */
  value: string | undefined
}
interface Waiter {
  owner: string
  mode: HoldMode
  weight: number
  ttlMs: number
  lockDelayMs: number
  staleAt: number // monotonic
  /** Who waits (AcquireRequest.description) and since when, epoch ms: for inspect. */
  description: string | undefined
  since: number
  /** Granted with the hold on a hand-over. */
  value: string | undefined
}
interface LockState {
  kind: LockKind
  fair: boolean
  permits: number
  holders: Map<string, Holder>
  /**
   * Lock delay: expired holds that keep their own slot (same mode) until their
   * `expiresAt`, held by nobody: their owners can not extend or release them.
   * An array, not a Set: almost always empty, and an empty array costs a
   * fraction of an empty Set in every held lock's state.
   */
  phantoms: Holder[]
  line: Waiter[]
  /** Highest token granted for this name while it has state (for inspect). */
  lastToken: bigint
}

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

/**
 * The state of one in-process store, shared by every client connected to it.
 *
 * Bounded state: a name's state goes as soon as nobody holds or awaits it
 * (a line entry only exists behind a hold or a lock-delay phantom, and every
 * end of those drops the name once idle), well within any `fenceTtl`. Fencing
 * needs no per-name counter: one store-wide counter numbers every grant, so
 * tokens strictly increase for every name (they are not consecutive per name)
 * for as long as the process lives, which is as long as this store does.
 */
class MemoryStore {
  readonly locks = new Map<string, LockState>()
  /** The last token granted, for any name. */
  lastToken = 0n
  /** Wake-up routes by owner (owners are unique across clients). */
  readonly watchers = new Map<string, (wake: Wake) => void>()
  /** Election observers by name (Driver.observe): told after every change of a name's holders. */
  readonly observers = new Map<string, Set<() => void>>()
  /** Ends of holds and of lock-delay phantoms, under one timer (set by the first driver on the store). */
  deadlines: Deadlines<Holder> | undefined
  constructor(readonly nextToken?: TokenSource) {}
}

/**
 * Where the store-wide token counter goes next, for an embedding that must
 * keep tokens increasing across restarts (the lock server's --data-dir): it
 * returns a token greater than `last`, the last token this store granted.
 */
export type TokenSource = (last: bigint) => bigint

/** `memory://` is the process-wide store; `memory://name` a separate named one. */
const stores = new Map<string, MemoryStore>()

export class MemoryDriver implements Driver {
  readonly store = 'memory'
  readonly capabilities = CAPABILITIES
  private readonly locks: Map<string, LockState>
  private readonly watchers: Map<string, (wake: Wake) => void>
  /** Owners this client watches, forgotten at close(). */
  private readonly mine = new Set<string>()
  private readonly deadlines: Deadlines<Holder>

  constructor(private readonly shared: MemoryStore = new MemoryStore()) {
    this.locks = shared.locks
    this.watchers = shared.watchers
    // What an end does touches only the shared state, so any driver of the store can run it.
    this.deadlines = shared.deadlines ??= new Deadlines((holder) => (holder.phantom ? this.endPhantom(holder) : this.expire(holder)))
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const now = monotonicNow()
    let state = this.locks.get(request.name)
    if (state && isIdle(state, now)) {
      this.drop(request.name, state)
      state = undefined
    }
    if (!state) {
      state = { kind: request.kind, fair: request.fair, permits: request.permits, holders: new Map(), phantoms: [], line: [], lastToken: 0n }
      this.locks.set(request.name, state)
    } else {
      const conflict = describeConflict(state, request)
      if (conflict) return { status: 'conflict', detail: conflict }
    }
    this.promote(request.name, state, now)

    const mine = state.holders.get(request.owner)
    if (mine) return { status: 'granted', token: mine.token, ttlMs: Math.max(0, Math.floor(mine.expiresAt - now)) }

    const queued = state.line.findIndex((w) => w.owner === request.owner)
    const barging = queued < 0 && (!request.fair || state.line.length === 0)
    // A newcomer of a non-fair name may take a free permit while others wait,
    // but never past a head that does not fit yet (a heavy permit, a writer):
    // it would keep the head waiting for as long as light ones keep coming.
    if (barging && canJoin(heldModes(state), asked(request), state.permits, hasQueuedWriter(state)) && !(request.mode === 'permit' && headStarved(state, now))) {
      return this.grant(request.name, state, request, now)
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
    const retryAfterMs = place > 0 ? Math.max(request.queueTtlMs, this.retryAfter(state, now)) : this.retryAfter(state, now)
    return { status: 'busy', retryAfterMs, ...holderOf(state, now) }
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const now = monotonicNow()
    return holds.map((hold) => {
      const state = this.locks.get(hold.name)
      const holder = state?.holders.get(hold.owner)
      if (!state || !holder || holder.expiresAt <= now) return { status: 'lost' }
      holder.expiresAt = now + ttlMs
      this.armExpiry(holder)
      return { status: 'extended', ttlMs }
    })
  }

  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const state = this.locks.get(hold.name)
    if (!state) return false
    const holder = state.holders.get(hold.owner)
    if (holder) {
      this.deadlines.delete(holder)
      state.holders.delete(hold.owner)
      this.changed(hold.name)
      // Released through a client that does not watch this owner: its own client is told (Driver.release).
      if (!this.mine.has(hold.owner)) this.notify(hold.owner, RELEASED_ELSEWHERE)
    } else {
      const queued = state.line.findIndex((w) => w.owner === hold.owner)
      if (queued >= 0) state.line.splice(queued, 1)
    }
    this.promote(hold.name, state, monotonicNow())
    this.dropIfIdle(hold.name, state)
    return holder !== undefined
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const state = this.locks.get(hold.name)
    const holder = state?.holders.get(hold.owner)
    if (!state || !holder || holder.mode !== 'write' || holder.expiresAt <= monotonicNow()) return false
    holder.mode = 'read'
    this.promote(hold.name, state, monotonicNow())
    return true
  }

  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    const holder = this.locks.get(hold.name)?.holders.get(hold.owner)
    if (!holder || holder.token !== hold.token || holder.expiresAt <= monotonicNow()) return false
    holder.value = value
    this.changed(hold.name)
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
    return this.info(name, state, now)
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
      yield this.info(name, state, now)
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
    // A lock-delay phantom blocked the name as a hold does: freeing it counts.
    const held = state.holders.size > 0 || state.phantoms.length > 0
    for (const holder of state.holders.values()) {
      this.deadlines.delete(holder)
      this.notify(holder.owner, { type: 'lost', reason: 'released by force (forceRelease)', cause: 'forced' })
    }
    for (const phantom of state.phantoms) this.deadlines.delete(phantom)
    if (held) this.changed(name)
    state.holders.clear()
    state.phantoms.length = 0
    const now = monotonicNow()
    for (const waiter of state.line.splice(0)) {
      if (waiter.staleAt > now) this.notify(waiter.owner, { type: 'retry' })
    }
    this.dropIfIdle(name, state)
    return held
  }

  /**
   * Epoch ms by which every hold of this store, and every lock delay of an
   * expired one, has ended (0 when there are none): what a restart of an
   * embedding with no persisted leases must wait out (the lock server's
   * --data-dir). A scan of the store: for a periodic check, not a hot path.
   */
  latestEnd(): number {
    const now = monotonicNow()
    let latest = -Infinity
    for (const state of this.locks.values()) {
      for (const holder of state.holders.values()) if (holder.expiresAt > latest) latest = holder.expiresAt
      for (const phantom of state.phantoms) if (phantom.expiresAt > latest) latest = phantom.expiresAt
    }
    return latest > now ? Math.ceil(Date.now() + latest - now) : 0
  }

  /** Like a network client going away: its holds stay until their ttl runs out. */
  async close(): Promise<void> {
    for (const owner of this.mine) this.watchers.delete(owner)
    this.mine.clear()
  }

  /** Hands the name to the head of the line while the head fits (several readers or permits at once). */
  private promote(name: string, state: LockState, now: number): void {
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

  private grant(
    name: string, state: LockState,
    who: { owner: string; mode: HoldMode; weight?: number | undefined; ttlMs: number; lockDelayMs: number; description?: string | undefined; value?: string | undefined }, now: number,
  ): { status: 'granted'; token: bigint; ttlMs: number } {
    const token = this.shared.nextToken ? this.shared.nextToken(this.shared.lastToken) : this.shared.lastToken + 1n
    this.shared.lastToken = token
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
  private armExpiry(holder: Holder): void {
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

  private retryAfter(state: LockState, now: number): number {
    let soonest = Infinity
    for (const holder of [...state.holders.values(), ...state.phantoms]) soonest = Math.min(soonest, holder.expiresAt - now)
    return Number.isFinite(soonest) ? Math.max(1, Math.ceil(soonest)) : 1
  }

  /** Tells the name's election observers, if any, after the current operation. */
  private changed(name: string): void {
    const observers = this.shared.observers.get(name)
    if (observers) for (const onChange of observers) queueMicrotask(onChange)
  }

  private notify(owner: string, wake: Wake): void {
    const watcher = this.watchers.get(owner)
    if (watcher) queueMicrotask(() => watcher(wake))
  }

  private info(name: string, state: LockState, now: number): LockInfo {
    const wall = Date.now()
    return {
      name, kind: state.kind, fair: state.fair, permits: state.permits,
      holders: [...state.holders.values()].map((h) => summary(h, now, wall)),
      waiters: state.line.filter((w) => w.staleAt > now).map((w) => ({
        owner: w.owner, mode: w.mode, ...weightField(w.mode, w.weight), since: w.since, ...(w.description !== undefined ? { description: w.description } : {}),
      })),
      lastToken: state.lastToken,
    }
  }

  private dropIfIdle(name: string, state: LockState): void {
    if (isIdle(state, monotonicNow())) this.drop(name, state)
  }

  private drop(name: string, state: LockState): void {
    for (const holder of [...state.holders.values(), ...state.phantoms]) this.deadlines.delete(holder)
    if (this.locks.get(name) === state) this.locks.delete(name)
  }
}

function isIdle(state: LockState, now: number): boolean {
  return state.holders.size === 0 && state.phantoms.length === 0 && state.line.every((w) => w.staleAt <= now)
}

/** The holds and the phantoms of expired holds (lock delay): both take their slot, and their weight. */
function heldModes(state: LockState): Held[] {
  return [...state.holders.values(), ...state.phantoms]
}

/** What a request asks for, as canJoin counts it. */
function asked(request: AcquireRequest): Held {
  return { mode: request.mode, weight: weightOf(request) }
}

/**
 * The live head of the line does not fit now: nobody may pass it (a
 * barging newcomer would take what the head waits to see freed).
 */
function headStarved(state: LockState, now: number): boolean {
  const head = state.line.find((w) => w.staleAt > now)
  return head !== undefined && !canJoin(heldModes(state), head, state.permits, false)
}

function hasQueuedWriter(state: LockState): boolean {
  return state.line.some((w) => w.mode === 'write' || w.mode === 'exclusive')
}

function summary(holder: Holder, now: number, wall: number): HolderSummary {
  return {
    owner: holder.owner, token: holder.token, mode: holder.mode, ...weightField(holder.mode, holder.weight), expiresAt: Math.round(wall + holder.expiresAt - now),
    since: holder.since, ...(holder.description !== undefined ? { description: holder.description } : {}),
    ...(holder.value !== undefined ? { value: holder.value } : {}),
  }
}

function holderOf(state: LockState, now: number): { holder?: HolderSummary } {
  const first = state.holders.values().next()
  return first.done ? {} : { holder: summary(first.value, now, Date.now()) }
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
