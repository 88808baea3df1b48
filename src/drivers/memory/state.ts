import type { AcquireRequest, HoldMode, HolderSummary, LockInfo, LockKind } from '../../core/driver.js'
import { canJoin, weightField, weightOf, type Held } from '../../core/compat.js'
import type { Deadline } from './deadlines.js'

/**
 * What the embedded store keeps for one name (holders, lock-delay phantoms,
 * the line), and the questions asked of it without changing it: idle?, does
 * the head fit?, how does it look to inspect? Apart from the store's
 * transitions (store.ts) and the client's calls (index.ts).
 */

export interface Holder extends Deadline {
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

export interface Waiter {
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

export interface LockState {
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

/** Who a grant is for: a request, or a waiter at the head of the line. */
export interface Grantee {
  owner: string
  mode: HoldMode
  weight?: number | undefined
  ttlMs: number
  lockDelayMs: number
  description?: string | undefined
  value?: string | undefined
}

export function isIdle(state: LockState, now: number): boolean {
  return state.holders.size === 0 && state.phantoms.length === 0 && state.line.every((w) => w.staleAt <= now)
}

/** The holds and the phantoms of expired holds (lock delay): both take their slot, and their weight. */
export function heldModes(state: LockState): Held[] {
  return [...state.holders.values(), ...state.phantoms]
}

/** What a request asks for, as canJoin counts it. */
export function asked(request: AcquireRequest): Held {
  return { mode: request.mode, weight: weightOf(request) }
}

/**
 * The live head of the line does not fit now: nobody may pass it (a
 * barging newcomer would take what the head waits to see freed).
 */
export function headStarved(state: LockState, now: number): boolean {
  const head = state.line.find((w) => w.staleAt > now)
  return head !== undefined && !canJoin(heldModes(state), head, state.permits, false)
}

export function hasQueuedWriter(state: LockState): boolean {
  return state.line.some((w) => w.mode === 'write' || w.mode === 'exclusive')
}

function summary(holder: Holder, now: number, wall: number): HolderSummary {
  return {
    owner: holder.owner, token: holder.token, mode: holder.mode, ...weightField(holder.mode, holder.weight), expiresAt: Math.round(wall + holder.expiresAt - now),
    since: holder.since, ...(holder.description !== undefined ? { description: holder.description } : {}),
    ...(holder.value !== undefined ? { value: holder.value } : {}),
  }
}

export function holderOf(state: LockState, now: number): { holder?: HolderSummary } {
  const first = state.holders.values().next()
  return first.done ? {} : { holder: summary(first.value, now, Date.now()) }
}

/** The name as inspect and list show it. */
export function infoOf(name: string, state: LockState, now: number): LockInfo {
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

/** When the soonest hold or phantom of the name ends: when trying again could succeed. */
export function retryAfter(state: LockState, now: number): number {
  let soonest = Infinity
  for (const holder of [...state.holders.values(), ...state.phantoms]) soonest = Math.min(soonest, holder.expiresAt - now)
  return Number.isFinite(soonest) ? Math.max(1, Math.ceil(soonest)) : 1
}
