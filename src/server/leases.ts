import type { Driver, ExtendResult, HoldMode, HoldRef, Wake } from '../core/driver.js'
import type { EventHub } from './events.js'
import { monotonicNow } from '../core/clock.js'

/** Width of one slot of the deadline wheel, in ms: expiries are reported within about this much. */
const SLOT_MS = 100
/** Looked at this long after a lease's end, so the store has surely let it go if nobody renewed it. */
const EXPIRY_CHECK_MS = 100

/** What the server keeps per lease it granted: enough for events and the held gauge, no timer, no closure. */
interface Tracked {
  readonly name: string
  readonly token: bigint
  mode: HoldMode
  /** Epoch ms the lease ends, by this server's last grant or renewal. */
  deadline: number
  /** Stops the store's wake-ups for this lease (see LeaseDesk.granted). */
  unwatch: () => void
  /** Granted by another server or an earlier run, renewed through this one (see LeaseDesk.adopt): its end is told to quotas only. */
  readonly adopted?: boolean
}

/**
 * The server's leases. The server is stateless in front of its store: a
 * lease id carries the hold's ref, and extend, release and downgrade go
 * straight to the driver, whichever server granted the lease. What it keeps
 * per lease is one small record (for the held gauge and for expiry events),
 * filed in a wheel of 100 ms deadline slots swept by one interval timer, and
 * its wake-up route: no timer or library Lease per held lock (the route
 * adds about 380 bytes per lease, measured on the memory store).
 *
 * Expiry is confirmed with the store before it is reported, since a lease may
 * have been renewed through another server sharing the store. A lease
 * released or forced through another server is told by the store at once:
 * the desk watches each lease it tracks (Driver.watch: a route for the
 * owner on the connection the store already has, nothing per lease in the
 * store) and reports a `lost` wake-up with cause `released` as a release,
 * any other as a loss, instead of an expiry at the lease's end.
 */
/** One shared no-op: a lease without a wake-up route allocates nothing for it. */
const NOTHING_TO_UNWATCH = (): void => {}

export class LeaseDesk {
  private readonly held = new Map<string, Tracked>()
  /** Slot number (epoch ms / SLOT_MS) → owners whose check falls in it; stale entries are skipped. */
  private readonly slots = new Map<number, string[]>()
  private sweeper: NodeJS.Timeout | undefined
  private swept = 0
  /** When each name was last force-released (monotonic ms), oldest first. */
  private readonly forced = new Map<string, number>()

  /** Owners of this server's grants start with this (its client id and a dot). */
  private readonly ownPrefix: string

  /**
   * `othersCanRelease`: false when the store is this server's own (the
   * embedded memory store): nobody else can end its leases, so the desk
   * keeps no wake-up route per lease (about 380 bytes each).
   */
  constructor(private readonly driver: Driver, private readonly hub: EventHub, clientId: string, private readonly othersCanRelease = true) {
    this.ownPrefix = `${clientId}.`
  }

  /** Leases granted through this server and not yet released, expired or lost. */
  get size(): number {
    return this.held.size
  }

  /** Whether this server granted `owner`'s lease and has not seen it end. */
  tracks(owner: string): boolean {
    return this.held.has(owner)
  }

  granted(ref: HoldRef, ttlMs: number, waitedMs: number): void {
    this.track(ref, ttlMs, false)
    this.hub.emit('grant', ref, Math.round(waitedMs))
  }

  /**
   * A lease this server did not grant (another server's, or this server's
   * before a restart), renewed through it: tracked from now on, so that the
   * token that renews it here has it counted against its hold quota until it
   * ends. No event: the server that granted it reports it.
   */
  adopt(ref: HoldRef, ttlMs: number): void {
    if (this.held.has(ref.owner)) return
    this.track(ref, ttlMs, true)
  }

  private track(ref: HoldRef, ttlMs: number, adopted: boolean): void {
    // A repeated request id is granted its lease again: one watch per owner still.
    this.held.get(ref.owner)?.unwatch()
    const tracked: Tracked = { name: ref.name, token: ref.token, mode: ref.mode, deadline: Date.now() + ttlMs, unwatch: NOTHING_TO_UNWATCH, ...(adopted ? { adopted } : {}) }
    if (this.othersCanRelease) tracked.unwatch = this.driver.watch(ref.name, ref.owner, (wake) => this.endedElsewhere(ref.owner, tracked, wake))
    this.held.set(ref.owner, tracked)
    this.file(ref.owner, tracked)
  }

  /** Tells the end of a tracked lease: an event for leases this server granted, quotas only for adopted ones. */
  private report(type: 'release' | 'expire' | 'lost', ref: HoldRef | { name: string; owner: string; token: bigint; mode: HoldMode }, tracked: Tracked): void {
    if (tracked.adopted) this.hub.ended(ref.owner)
    else this.hub.emit(type, ref)
  }

  async release(ref: HoldRef): Promise<boolean> {
    const held = await this.driver.release(ref)
    const tracked = this.take(ref)
    // Each server reports the leases it granted, wherever they are released.
    if (tracked?.adopted) this.hub.ended(ref.owner)
    else if (held && ref.owner.startsWith(this.ownPrefix)) this.hub.emit('release', ref)
    else if (!held && tracked) this.hub.emit('expire', ref)
    return held
  }

  /** Renews in one driver batch; results in input order. */
  async extend(refs: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const results = await this.driver.extend(refs, ttlMs)
    const now = Date.now()
    refs.forEach((ref, i) => {
      const result = results[i]!
      if (result.status === 'extended') {
        const tracked = this.mine(ref)
        if (tracked) {
          tracked.deadline = now + result.ttlMs
          this.file(ref.owner, tracked)
        }
      } else {
        const tracked = this.take(ref)
        if (tracked) this.report('lost', ref, tracked)
      }
    })
    return results
  }

  async downgrade(ref: HoldRef): Promise<boolean> {
    if (!this.driver.downgrade || ref.mode !== 'write') return false
    const done = await this.driver.downgrade(ref)
    const tracked = this.mine(ref)
    if (tracked) tracked.mode = done ? 'read' : tracked.mode
    return done
  }

  /**
   * Whether `name` was force-released at or after `since` (monotonic ms): a
   * grant that started before then may be one the force took away while it
   * was on its way to its client (a hand-over racing the force).
   */
  forcedSince(name: string, since: number): boolean {
    const at = this.forced.get(name)
    return at !== undefined && at >= since
  }

  /**
   * Frees `name`; the holders this server granted are reported lost, and
   * every holder (those taken on the store directly too) as forced `by`.
   */
  async forceRelease(name: string, by?: string): Promise<boolean> {
    this.forced.delete(name)
    this.forced.set(name, monotonicNow())
    // Kept a minute at most: no grant is on its way that long.
    for (const [forcedName, at] of this.forced) {
      if (monotonicNow() - at < 60_000) break
      this.forced.delete(forcedName)
    }
    const before = await this.driver.inspect(name).catch(() => null)
    const released = await this.driver.forceRelease(name)
    for (const holder of before?.holders ?? []) {
      const ref = { name, owner: holder.owner, token: holder.token, mode: holder.mode }
      const tracked = this.take(ref)
      if (tracked) this.report('lost', ref, tracked)
      if (released) this.hub.emit('forced', ref, undefined, by)
    }
    return released
  }

  close(): void {
    clearInterval(this.sweeper)
    this.sweeper = undefined
    for (const tracked of this.held.values()) tracked.unwatch()
  }

  /**
   * The store says the hold is gone: it was released (cause `released`:
   * through another server sharing the store, since this server's own
   * releases are not told back) or taken (forced through another server, or
   * a lost session). Reported now, not as an expiry at the lease's end.
   * Releases and forces through this server took the lease off the desk
   * already, so their wake-ups find nothing here.
   */
  private endedElsewhere(owner: string, tracked: Tracked, wake: Wake): void {
    if (wake.type !== 'lost' || this.held.get(owner) !== tracked) return
    const ref = { name: tracked.name, owner, token: tracked.token, mode: tracked.mode }
    this.take(ref)
    this.report(wake.cause === 'released' ? 'release' : 'lost', ref, tracked)
  }

  /** Records kept: leases tracked plus deadline entries filed (some stale); 0 when nothing is held. */
  get records(): number {
    let filed = 0
    for (const owners of this.slots.values()) filed += owners.length
    return this.held.size + filed
  }

  /**
   * Nothing held: every filed deadline is stale, so the wheel is emptied with
   * the timer. Slots that passed while the timer was stopped would otherwise
   * never be swept (a restarted timer starts at "now").
   */
  private idle(): void {
    this.close()
    this.slots.clear()
  }

  private mine(ref: { owner: string; name: string; token: bigint }): Tracked | undefined {
    const tracked = this.held.get(ref.owner)
    return tracked && tracked.name === ref.name && tracked.token === ref.token ? tracked : undefined
  }

  /** Stops tracking `ref`; the record if it was tracked. */
  private take(ref: { owner: string; name: string; token: bigint }): Tracked | undefined {
    const tracked = this.mine(ref)
    if (tracked) {
      this.held.delete(ref.owner)
      tracked.unwatch()
    }
    if (this.held.size === 0) this.idle()
    return tracked
  }

  private slotOf(tracked: Tracked): number {
    return Math.ceil((tracked.deadline + EXPIRY_CHECK_MS) / SLOT_MS)
  }

  private file(owner: string, tracked: Tracked): void {
    const slot = this.slotOf(tracked)
    const owners = this.slots.get(slot)
    if (owners) owners.push(owner)
    else this.slots.set(slot, [owner])
    if (!this.sweeper) {
      // From the earliest slot still filed, so none is skipped (the wheel is empty when the timer stopped idle).
      let earliest = Math.floor(Date.now() / SLOT_MS)
      for (const at of this.slots.keys()) if (at < earliest) earliest = at
      this.swept = earliest
      this.sweeper = setInterval(() => this.sweep(), SLOT_MS)
      this.sweeper.unref()
    }
  }

  private sweep(): void {
    const now = Math.floor(Date.now() / SLOT_MS)
    for (; this.swept <= now; this.swept++) {
      const owners = this.slots.get(this.swept)
      if (!owners) continue
      this.slots.delete(this.swept)
      for (const owner of owners) {
        const tracked = this.held.get(owner)
        // Released, or renewed into a later slot, since it was filed here.
        if (tracked && this.slotOf(tracked) === this.swept) void this.confirmExpiry(owner, tracked)
      }
    }
    if (this.held.size === 0) this.idle()
  }

  /** Reports the expiry once the store confirms the owner no longer holds the name. */
  private async confirmExpiry(owner: string, tracked: Tracked): Promise<void> {
    const ref = { name: tracked.name, owner, token: tracked.token, mode: tracked.mode }
    let expiresAt: number | undefined
    try {
      const view = await this.driver.inspect(tracked.name)
      expiresAt = view?.holders.find((h) => h.owner === owner && h.token === tracked.token)?.expiresAt
    } catch {
      // The store does not answer: the lease can not be renewed either.
    }
    if (this.held.get(owner) !== tracked) return
    if (expiresAt === undefined) {
      this.take(ref)
      return this.report('expire', ref, tracked)
    }
    // Renewed through another server, or the store is a little late: look again once its lease is over.
    tracked.deadline = Math.max(expiresAt, Date.now())
    this.file(owner, tracked)
  }
}
