import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, ExtendResult, HoldMode, HoldRef,
  HolderSummary, LockInfo, LockKind, LockSpec, Wake,
} from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { canJoin, describeConflict } from '../../core/compat.js'
import type { StoreUrl } from '../../core/url.js'

/**
 * The embedded store: the reference semantics every other store matches.
 * State lives in maps; expiry and lock delay run on (unref'd) timers, and a
 * release or expiry hands the lock to the head of the line at once.
 */
interface Holder {
  owner: string
  token: bigint
  mode: HoldMode
  expiresAt: number // monotonic
  lockDelayMs: number
  timer: NodeJS.Timeout
}
interface Waiter {
  owner: string
  mode: HoldMode
  ttlMs: number
  lockDelayMs: number
  staleAt: number // monotonic
}
interface LockState {
  kind: LockKind
  fair: boolean
  permits: number
  holders: Map<string, Holder>
  line: Waiter[]
  blockedUntil: number // monotonic; lock delay after an expiry
  delayTimer?: NodeJS.Timeout
}

const CAPABILITIES: Capabilities = {
  fair: true, rwlock: true, semaphore: true, lockDelay: true, handoff: true, durableTokens: false,
}

/**
 * Where fencing tokens come from, for an embedding that must keep them
 * increasing across restarts (the lock server's --data-dir): it returns a
 * token greater than `last` (the name's previous token, 0n if none is known).
 */
export type TokenSource = (name: string, last: bigint) => bigint

/** The state of one in-process store, shared by every client connected to it. */
class MemoryStore {
  readonly locks = new Map<string, LockState>()
  /** Fencing counters outlive the locks they count for. */
  readonly tokens = new Map<string, bigint>()
  /** Wake-up routes by owner (owners are unique across clients). */
  readonly watchers = new Map<string, (wake: Wake) => void>()
  constructor(readonly nextToken?: TokenSource) {}
}

/** `memory://` is the process-wide store; `memory://name` a separate named one. */
const stores = new Map<string, MemoryStore>()

export class MemoryDriver implements Driver {
  readonly store = 'memory'
  readonly capabilities = CAPABILITIES
  private readonly locks: Map<string, LockState>
  private readonly tokens: Map<string, bigint>
  private readonly watchers: Map<string, (wake: Wake) => void>
  private readonly nextToken: TokenSource | undefined
  /** Owners this client watches, forgotten at close(). */
  private readonly mine = new Set<string>()

  constructor(shared: MemoryStore = new MemoryStore()) {
    this.locks = shared.locks
    this.tokens = shared.tokens
    this.watchers = shared.watchers
    this.nextToken = shared.nextToken
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const now = monotonicNow()
    let state = this.locks.get(request.name)
    if (state && isIdle(state, now)) {
      this.drop(request.name, state)
      state = undefined
    }
    if (!state) {
      state = { kind: request.kind, fair: request.fair, permits: request.permits, holders: new Map(), line: [], blockedUntil: 0 }
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
    if (barging && now >= state.blockedUntil && canJoin(heldModes(state), request.mode, state.permits, hasQueuedWriter(state))) {
      return this.grant(request.name, state, request, now)
    }
    if (request.enqueue) {
      const staleAt = now + request.queueTtlMs
      if (queued >= 0) state.line[queued]!.staleAt = staleAt
      else state.line.push({ owner: request.owner, mode: request.mode, ttlMs: request.ttlMs, lockDelayMs: request.lockDelayMs, staleAt })
    }
    return { status: 'busy', retryAfterMs: this.retryAfter(state, now), ...holderOf(state, now) }
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const now = monotonicNow()
    return holds.map((hold) => {
      const state = this.locks.get(hold.name)
      const holder = state?.holders.get(hold.owner)
      if (!state || !holder || holder.expiresAt <= now) return { status: 'lost' }
      holder.expiresAt = now + ttlMs
      this.armExpiry(hold.name, state, holder, ttlMs)
      return { status: 'extended', ttlMs }
    })
  }

  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const state = this.locks.get(hold.name)
    if (!state) return false
    const holder = state.holders.get(hold.owner)
    if (holder) {
      clearTimeout(holder.timer)
      state.holders.delete(hold.owner)
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

  async *list(prefix: string): AsyncIterable<LockInfo> {
    const now = monotonicNow()
    for (const [name, state] of [...this.locks]) {
      if (name.startsWith(prefix) && !isIdle(state, now)) yield this.info(name, state, now)
    }
  }

  async forceRelease(name: string): Promise<boolean> {
    const state = this.locks.get(name)
    if (!state) return false
    const held = state.holders.size > 0
    for (const holder of state.holders.values()) {
      clearTimeout(holder.timer)
      this.notify(holder.owner, { type: 'lost', reason: 'released by force (forceRelease)' })
    }
    state.holders.clear()
    state.blockedUntil = 0
    this.promote(name, state, monotonicNow())
    this.dropIfIdle(name, state)
    return held
  }

  /** Like a network client going away: its holds stay until their ttl runs out. */
  async close(): Promise<void> {
    for (const owner of this.mine) this.watchers.delete(owner)
    this.mine.clear()
  }

  /** Hands the name to the head of the line while the head fits (several readers or permits at once). */
  private promote(name: string, state: LockState, now: number): void {
    if (now < state.blockedUntil) return
    while (state.line.length > 0) {
      const head = state.line[0]!
      if (head.staleAt <= now) {
        state.line.shift()
        continue
      }
      if (!canJoin(heldModes(state), head.mode, state.permits, false)) return
      state.line.shift()
      const { token, ttlMs } = this.grant(name, state, head, now)
      this.notify(head.owner, { type: 'granted', token, ttlMs })
    }
  }

  private grant(
    name: string, state: LockState,
    who: { owner: string; mode: HoldMode; ttlMs: number; lockDelayMs: number }, now: number,
  ): { status: 'granted'; token: bigint; ttlMs: number } {
    const last = this.tokens.get(name) ?? 0n
    const token = this.nextToken ? this.nextToken(name, last) : last + 1n
    this.tokens.set(name, token)
    const holder: Holder = {
      owner: who.owner, token, mode: who.mode, expiresAt: now + who.ttlMs, lockDelayMs: who.lockDelayMs,
      timer: undefined as unknown as NodeJS.Timeout,
    }
    state.holders.set(who.owner, holder)
    this.armExpiry(name, state, holder, who.ttlMs)
    return { status: 'granted', token, ttlMs: who.ttlMs }
  }

  private armExpiry(name: string, state: LockState, holder: Holder, ttlMs: number): void {
    clearTimeout(holder.timer)
    holder.timer = setTimeout(() => this.expire(name, state, holder), ttlMs + 1)
    holder.timer.unref()
  }

  private expire(name: string, state: LockState, holder: Holder): void {
    if (state.holders.get(holder.owner) !== holder) return
    const now = monotonicNow()
    if (holder.expiresAt > now) return this.armExpiry(name, state, holder, holder.expiresAt - now)
    state.holders.delete(holder.owner)
    if (holder.lockDelayMs > 0) {
      state.blockedUntil = Math.max(state.blockedUntil, now + holder.lockDelayMs)
      clearTimeout(state.delayTimer)
      state.delayTimer = setTimeout(() => {
        this.promote(name, state, monotonicNow())
        this.dropIfIdle(name, state)
        this.wakeLine(state)
      }, state.blockedUntil - now + 1)
      state.delayTimer.unref()
      return
    }
    this.promote(name, state, now)
    this.dropIfIdle(name, state)
  }

  /** After a lock delay ends with nobody to hand to, let barging waiters of a non-fair lock retry. */
  private wakeLine(state: LockState): void {
    for (const waiter of state.line) this.notify(waiter.owner, { type: 'retry' })
  }

  private retryAfter(state: LockState, now: number): number {
    let soonest = state.blockedUntil > now ? state.blockedUntil - now : Infinity
    for (const holder of state.holders.values()) soonest = Math.min(soonest, holder.expiresAt - now)
    return Number.isFinite(soonest) ? Math.max(1, Math.ceil(soonest)) : 1
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
      waiters: state.line.filter((w) => w.staleAt > now).map((w) => ({ owner: w.owner, mode: w.mode })),
      lastToken: this.tokens.get(name) ?? 0n,
    }
  }

  private dropIfIdle(name: string, state: LockState): void {
    if (isIdle(state, monotonicNow())) this.drop(name, state)
  }

  private drop(name: string, state: LockState): void {
    for (const holder of state.holders.values()) clearTimeout(holder.timer)
    clearTimeout(state.delayTimer)
    if (this.locks.get(name) === state) this.locks.delete(name)
  }
}

function isIdle(state: LockState, now: number): boolean {
  return state.holders.size === 0 && now >= state.blockedUntil && state.line.every((w) => w.staleAt <= now)
}

function heldModes(state: LockState): HoldMode[] {
  return [...state.holders.values()].map((h) => h.mode)
}

function hasQueuedWriter(state: LockState): boolean {
  return state.line.some((w) => w.mode === 'write' || w.mode === 'exclusive')
}

function summary(holder: Holder, now: number, wall: number): HolderSummary {
  return { owner: holder.owner, token: holder.token, mode: holder.mode, expiresAt: Math.round(wall + holder.expiresAt - now) }
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
