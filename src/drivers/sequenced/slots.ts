import type { AcquireResult, HoldMode, HoldRef, LockKind, AttemptSpec, Wake } from '../../core/driver.js'
import { monotonicNow } from '../../core/clock.js'
import { blockersOf, holdersIn, summaryOf, type LineEntry } from './line.js'

/**
 * A client's own entries in sequenced lines (etcd keys, ZooKeeper nodes):
 * waiting, then holding. The bookkeeping both consensus drivers share: wake-up
 * routes, the client-side end of holds and of stale places in line, and the
 * re-check a waiter makes when something it waits for changed.
 */
export interface Slot {
  readonly owner: string
  readonly name: string
  /** The entry's key or node path. */
  readonly id: string
  readonly kind: LockKind
  mode: HoldMode
  readonly permits: number
  /** LockSpec.weight: how many permits the entry takes (1 for other kinds). */
  readonly weight: number
  /** LockSpec.lockDelayMs: how long the entry outlives a hold that expired (not one released). */
  readonly lockDelayMs: number
  token: bigint
  held: boolean
  ttlMs: number
  /** Monotonic end of the hold as this client enforces it. */
  endsAt: number
  expiry?: NodeJS.Timeout
  stale?: NodeJS.Timeout
  /** Ids of the entries this waiter waits for (see blockersOf). */
  blockers: ReadonlySet<string>
  checking: boolean
  again: boolean
}

export interface SlotStore<S extends Slot> {
  /**
   * Deletes the slot's entry in the store. Resolves once it is surely gone
   * (deleted, or its lease/session ended); rejects when the store did not
   * answer, and is then called again later.
   */
  drop(slot: S): Promise<void>
  /** The line of `slot`'s name as the store has it now, with a store-specific read marker. */
  readLine(slot: S): Promise<{ line: LineEntry[]; marker: unknown }>
  /** Arranges to re-check `slot` when one of `blockers` changes (the read was taken at `marker`). */
  standBehind(slot: S, blockers: readonly LineEntry[], marker: unknown): void
  /** What a grant or renewal reports as the lease left (never past what the store surely keeps). */
  ttlLeft(slot: S): number
  /**
   * A hold with a lock delay expired: its entry stays in its place for the
   * delay (a phantom holder of the same mode) and then goes by the store's own
   * means, even if this client dies meanwhile. Rejects when the store did not
   * answer, and is then called again later.
   */
  keepForLockDelay(slot: S): Promise<void>
  /** Called when a slot leaves this client's books. */
  forgotten?(slot: S): void
}

export class Slots<S extends Slot> {
  readonly byOwner = new Map<string, S>()
  private readonly wakes = new Map<string, (wake: Wake) => void>()
  /** Deletes waiting to be tried again (the store did not answer). */
  private readonly retries = new Set<NodeJS.Timeout>()
  /**
   * Owners whose entry this client has decided to remove, with the try in
   * flight, until the store confirmed a removal. A later attempt of the same
   * owner would otherwise re-find that entry (by its owner-derived name, as a
   * retry after a lost reply must) and be answered `granted` while the delete
   * is still on its way: etcd runs concurrent requests in any order, and a
   * delete tried again after a failure is sent after the attempt. Once the
   * delete lands, the store lets the next owner in, and this one only learns
   * of it afterwards (two holders; seen by `baton verify` after a SIGSTOP).
   */
  private readonly removals = new Map<string, Set<{ pending: Promise<void> }>>()
  private closed = false

  constructor(private readonly store: SlotStore<S>) {}

  get(owner: string): S | undefined {
    return this.byOwner.get(owner)
  }

  watch(owner: string, onWake: (wake: Wake) => void): () => void {
    this.wakes.set(owner, onWake)
    return () => {
      if (this.wakes.get(owner) === onWake) this.wakes.delete(owner)
    }
  }

  adopt(slot: S): void {
    this.byOwner.set(slot.owner, slot)
  }

  /**
   * Marks the slot held for its ttl from now. A live client deletes its entry
   * when the ttl ends unrenewed; a dead one's entry goes with its lease/session.
   */
  hold(slot: S): void {
    slot.held = true
    clearTimeout(slot.stale)
    clearTimeout(slot.expiry)
    slot.endsAt = monotonicNow() + slot.ttlMs
    slot.expiry = setTimeout(() => this.expire(slot), slot.ttlMs + 1)
    slot.expiry.unref()
  }

  granted(slot: S): AcquireResult {
    return { status: 'granted', token: slot.token, ttlMs: this.store.ttlLeft(slot) }
  }

  /** A waiter not refreshed within its queue ttl leaves the line (its owner gave up or died). */
  keepWaiting(slot: S, queueTtlMs: number): void {
    clearTimeout(slot.stale)
    slot.stale = setTimeout(() => {
      if (!slot.held) this.drop(slot)
    }, queueTtlMs)
    slot.stale.unref()
  }

  /** The hold's ttl ended unrenewed: its entry goes, or stays for the lock delay first. */
  private expire(slot: S): void {
    if (this.byOwner.get(slot.owner) !== slot) return
    if (slot.lockDelayMs <= 0) return this.drop(slot)
    this.forget(slot)
    // Given up like a removal: the owner's entry is a phantom now, never its hold again.
    void this.remove(slot.owner, () => this.store.keepForLockDelay(slot)).catch(() => {})
  }

  /** Leaves the books and deletes the entry in the store. */
  drop(slot: S): void {
    if (this.byOwner.get(slot.owner) !== slot) return
    this.forget(slot)
    this.deleteEntry(slot)
  }

  /**
   * Deletes the entry of a slot this client gave up, again and again while
   * the store does not answer: an entry left behind by a failed delete would
   * hold its place (a ghost holder nobody releases) for as long as this
   * client keeps its lease or session alive, e.g. once a lost majority is back.
   */
  deleteEntry(slot: S): void {
    void this.remove(slot.owner, () => this.store.drop(slot)).catch(() => {})
  }

  /**
   * Removes an entry of `owner` from the store: the first try's outcome is
   * returned, and while the store does not answer it is tried again, with a
   * backoff, until it succeeds or the client closes. Until then the owner is
   * `removing` (see `settled`), so none of its later attempts adopts the entry.
   */
  remove(owner: string, step: () => Promise<void>): Promise<void> {
    const removal = { pending: Promise.resolve() }
    const ofOwner = this.removals.get(owner) ?? new Set()
    ofOwner.add(removal)
    this.removals.set(owner, ofOwner)
    const done = (): void => {
      ofOwner.delete(removal)
      if (ofOwner.size === 0 && this.removals.get(owner) === ofOwner) this.removals.delete(owner)
    }
    const attempt = (delayMs: number): Promise<void> => {
      const tried = step()
      removal.pending = tried.then(() => {}, () => {})
      tried.then(done, () => {
        if (this.closed) return done()
        this.later(() => void attempt(Math.min(delayMs * 2, 5000)).catch(() => {}), delayMs)
      })
      return tried
    }
    return attempt(250)
  }

  /**
   * Waits for the removals of `owner`'s entries in flight, if any; true when
   * none is pending any more (the store confirmed each). An attempt of that
   * owner must not look for its entry before this is true: the entry it would
   * find is one this client is deleting.
   */
  async settled(owner: string): Promise<boolean> {
    const ofOwner = this.removals.get(owner)
    if (!ofOwner) return true
    await Promise.all([...ofOwner].map((r) => r.pending))
    return !this.removals.has(owner)
  }

  /** Runs `run` after `delayMs` unless the client closed meanwhile. */
  private later(run: () => void, delayMs: number): void {
    if (this.closed) return
    const timer = setTimeout(() => {
      this.retries.delete(timer)
      if (!this.closed) run()
    }, delayMs)
    timer.unref()
    this.retries.add(timer)
  }

  /**
   * Removes what attempts of `owner` whose replies were lost may have left in
   * the store (an entry this client does not know of, on its live lease or
   * session, which nobody else would ever delete). The first try's outcome is
   * returned; while the store does not answer, it is tried again with a
   * backoff until it succeeds or the client closes (no later attempt of the
   * same owner adopts the entry meanwhile: see `settled`).
   */
  removeLeftovers(owner: string, remove: () => Promise<void>): Promise<void> {
    return this.remove(owner, remove)
  }

  /**
   * Driver.release: the owner's slot leaves the books and its entry the
   * store (true if it held). An owner of this client that has no slot here
   * (a spec, not a hold: an acquire that failed) may still have an entry
   * made by an attempt whose reply was lost: `leftovers` removes it (see
   * removeLeftovers).
   */
  async release(hold: HoldRef | AttemptSpec, clientId: string, leftovers: () => Promise<void>): Promise<boolean> {
    const slot = this.get(hold.owner)
    if (!slot || slot.name !== hold.name) {
      if (!('token' in hold) && hold.owner.startsWith(`${clientId}.`)) await this.removeLeftovers(hold.owner, leftovers)
      return false
    }
    this.forget(slot)
    await this.remove(slot.owner, () => this.store.drop(slot))
    return slot.held
  }

  forget(slot: S): void {
    if (this.byOwner.get(slot.owner) === slot) this.byOwner.delete(slot.owner)
    clearTimeout(slot.expiry)
    clearTimeout(slot.stale)
    this.store.forgotten?.(slot)
  }

  /** The entry vanished without us (forced release, lease or session end). */
  gone(slot: S, why: string): void {
    if (this.byOwner.get(slot.owner) !== slot) return
    this.forget(slot)
    this.wake(slot.owner, slot.held ? { type: 'lost', reason: why } : { type: 'retry' })
  }

  wake(owner: string, wake: Wake): void {
    this.wakes.get(owner)?.(wake)
  }

  /**
   * Places the slot by a fresh read of its line: granted now, or waiting
   * behind its blockers. Returns undefined when its entry is gone.
   */
  place(slot: S, line: readonly LineEntry[], marker: unknown): 'granted' | 'waiting' | undefined {
    const index = line.findIndex((e) => e.id === slot.id)
    if (index < 0) return undefined
    const blockers = blockersOf(line, index)
    if (blockers.length === 0) {
      this.hold(slot)
      return 'granted'
    }
    slot.blockers = new Set(blockers.map((b) => b.id))
    this.store.standBehind(slot, blockers, marker)
    return 'waiting'
  }

  /** Something the waiter waits for changed: read the line again (coalesced) and grant or wait on. */
  async recheck(slot: S): Promise<void> {
    if (slot.checking) {
      slot.again = true
      return
    }
    slot.checking = true
    try {
      do {
        slot.again = false
        const { line, marker } = await this.store.readLine(slot)
        if (this.byOwner.get(slot.owner) !== slot || slot.held) return
        const placed = this.place(slot, line, marker)
        if (placed === undefined) return this.gone(slot, 'its entry vanished')
        if (placed === 'granted') {
          this.wake(slot.owner, { type: 'granted', token: slot.token, ttlMs: this.store.ttlLeft(slot) })
          return
        }
      } while (slot.again)
    } catch {
      // The store did not answer: read again soon. The watches that woke us
      // fired once and are not set again until the line is read, so giving up
      // here would leave a waiter due a grant never told (its own refreshes
      // read the line too, but they may be far apart).
      this.later(() => {
        if (this.byOwner.get(slot.owner) === slot && !slot.held) void this.recheck(slot)
      }, 250)
    } finally {
      slot.checking = false
    }
  }

  /** Forgets every slot (client closing); returns the waiting ones, whose entries should be deleted. */
  clear(): S[] {
    const all = [...this.byOwner.values()]
    for (const slot of all) this.forget(slot)
    this.wakes.clear()
    this.closed = true
    for (const timer of this.retries) clearTimeout(timer)
    this.retries.clear()
    return all.filter((s) => !s.held)
  }
}

/**
 * The answer to an attempt of an owner whose entry this client is still
 * removing (`Slots.settled` is false): the store did not confirm the delete
 * yet, which is tried again meanwhile; the attempt is tried again shortly.
 */
export const STILL_REMOVING: AcquireResult = { status: 'busy', retryAfterMs: 250 }

/** A busy answer: wake-ups come from watches, the core only comes back to refresh the place in line. */
export function busyIn(line: readonly LineEntry[], queueTtlMs: number): AcquireResult {
  const first = holdersIn(line)[0]
  return { status: 'busy', retryAfterMs: Math.max(1, queueTtlMs), ...(first ? { holder: summaryOf(first, 0) } : {}) }
}

export function newSlot<S extends Slot>(fields: Omit<S, 'held' | 'endsAt' | 'blockers' | 'checking' | 'again'>): S {
  return { ...fields, held: false, endsAt: 0, blockers: new Set<string>(), checking: false, again: false } as unknown as S
}
