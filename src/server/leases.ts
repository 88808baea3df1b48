import type { Driver, ExtendResult, HoldMode, HoldRef } from '../core/driver.js'
import type { EventHub } from './events.js'

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
}

/**
 * The server's leases. The server is stateless in front of its store: a
 * lease id carries the hold's ref, and extend, release and downgrade go
 * straight to the driver, whichever server granted the lease. What it keeps
 * per lease is one small record (for the held gauge and for expiry events),
 * filed in a wheel of 100 ms deadline slots swept by one interval timer:
 * no timer, closure or library Lease per held lock.
 *
 * Expiry is confirmed with the store before it is reported, since a lease may
 * have been renewed through another server sharing the store.
 */
export class LeaseDesk {
  private readonly held = new Map<string, Tracked>()
  /** Slot number (epoch ms / SLOT_MS) → owners whose check falls in it; stale entries are skipped. */
  private readonly slots = new Map<number, string[]>()
  private sweeper: NodeJS.Timeout | undefined
  private swept = 0

  /** Owners of this server's grants start with this (its client id and a dot). */
  private readonly ownPrefix: string

  constructor(private readonly driver: Driver, private readonly hub: EventHub, clientId: string) {
    this.ownPrefix = `${clientId}.`
  }

  /** Leases granted through this server and not yet released, expired or lost. */
  get size(): number {
    return this.held.size
  }

  granted(ref: HoldRef, ttlMs: number, waitedMs: number): void {
    const tracked: Tracked = { name: ref.name, token: ref.token, mode: ref.mode, deadline: Date.now() + ttlMs }
    this.held.set(ref.owner, tracked)
    this.file(ref.owner, tracked)
    this.hub.emit('grant', ref, Math.round(waitedMs))
  }

  async release(ref: HoldRef): Promise<boolean> {
    const held = await this.driver.release(ref)
    const tracked = this.take(ref)
    // Each server reports the leases it granted, wherever they are released.
    if (held && ref.owner.startsWith(this.ownPrefix)) this.hub.emit('release', ref)
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
      } else if (this.take(ref)) {
        this.hub.emit('lost', ref)
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

  /** Frees `name`; the holders this server granted are reported lost. */
  async forceRelease(name: string): Promise<boolean> {
    const before = await this.driver.inspect(name).catch(() => null)
    const released = await this.driver.forceRelease(name)
    for (const holder of before?.holders ?? []) {
      const ref = { name, owner: holder.owner, token: holder.token, mode: holder.mode }
      if (this.take(ref)) this.hub.emit('lost', ref)
    }
    return released
  }

  close(): void {
    clearInterval(this.sweeper)
    this.sweeper = undefined
  }

  private mine(ref: { owner: string; name: string; token: bigint }): Tracked | undefined {
    const tracked = this.held.get(ref.owner)
    return tracked && tracked.name === ref.name && tracked.token === ref.token ? tracked : undefined
  }

  /** Stops tracking `ref`; the record if it was tracked. */
  private take(ref: { owner: string; name: string; token: bigint }): Tracked | undefined {
    const tracked = this.mine(ref)
    if (tracked) this.held.delete(ref.owner)
    if (this.held.size === 0) this.close()
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
      this.swept = Math.floor(Date.now() / SLOT_MS)
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
    if (this.held.size === 0 && this.slots.size === 0) this.close()
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
      return this.hub.emit('expire', ref)
    }
    // Renewed through another server, or the store is a little late: look again once its lease is over.
    tracked.deadline = Math.max(expiresAt, Date.now())
    this.file(owner, tracked)
  }
}
