import type { AcquireResult, Wake } from '../../core/driver.js'
import { earliestArrival, monotonicNow } from '../../core/clock.js'
import type { Api } from './api.js'
import { LossStream } from './loss-stream.js'
import { noteLostEarly, ownersByDigest, takeLostEarly } from './owners.js'
import type { GrantBody } from './wire.js'

/** A hold this client has through the server. */
export interface Held {
  leaseId: string
  token: bigint
  digest: string
  /** Monotonic ms after which the server has surely let it go (unless renewed). */
  until: number
  /** The session whose keepalives renew it on the server, once a renewal sent with the session's id made it join. */
  session: string | undefined
  /** The ttl its session renews it to. */
  sessionTtlMs: number
  /** Monotonic instant it joined its session: a keepalive sent before that does not cover it. */
  joinedAt: number
}

/** Holds past their end by this much are forgotten even if never released (a lease left to expire). */
const FORGET_AFTER_MS = 60_000

/**
 * The leases this client holds through the server, by owner, and the
 * owners' wake-up handlers: a grant is remembered here, a loss (from the
 * event stream or a keepalive) reaches its holder from here. The loss
 * stream is open while anything is held.
 */
export class Holds {
  private readonly held = new Map<string, Held>()
  private readonly watchers = new Map<string, (wake: Wake) => void>()
  private readonly losses: LossStream
  private grantsSincePrune = 0

  constructor(api: Api) {
    this.losses = new LossStream(api, (digest, reason) => this.lost(digest, reason), () => {
      // The core re-reads a hold told "retry" (src/core/lease.ts).
      for (const owner of [...this.held.keys()]) this.watchers.get(owner)?.({ type: 'retry' })
    })
  }

  get(owner: string): Held | undefined {
    return this.held.get(owner)
  }

  all(): IterableIterator<Held> {
    return this.held.values()
  }

  has(owner: string): boolean {
    return this.held.has(owner)
  }

  watch(owner: string, onWake: (wake: Wake) => void): () => void {
    this.watchers.set(owner, onWake)
    return () => {
      if (this.watchers.get(owner) === onWake) this.watchers.delete(owner)
    }
  }

  /** Tells the owner's watcher, if it has one. */
  wake(owner: string, wake: Wake): void {
    this.watchers.get(owner)?.(wake)
  }

  lost(digest: string, reason: string): void {
    const owner = ownersByDigest.get(digest)
    if (owner === undefined || !this.held.has(owner)) return noteLostEarly(digest)
    this.forget(owner)
    this.watchers.get(owner)?.({ type: 'lost', reason })
  }

  /** Once the loss stream is open, so a forced release right after the grant still reaches the holder. */
  async granted(owner: string, body: GrantBody, ttlMs: number): Promise<AcquireResult> {
    this.remember(owner, body, ttlMs)
    await this.losses.opened
    this.lossOvertook(owner, body.owner)
    return { status: 'granted', token: BigInt(body.token), ttlMs: body.ttlMs }
  }

  /**
   * A grant that came as the answer to a waiting request: delivered to the
   * owner as a hand-over wake-up once the loss stream covers it, or given
   * back when nobody watches the owner any more.
   */
  handOver(owner: string, grant: GrantBody, ttlMs: number, giveBack: () => void): void {
    this.remember(owner, grant, ttlMs)
    void this.losses.opened.then(() => {
      const watcher = this.watchers.get(owner)
      if (!watcher) return giveBack()
      // What is left by this process's count (from before any stall the answer sat through),
      // not the full ttl: the core's refresh attempts answer busy without asking the server,
      // so a wake-up after them does not prove the grant came after them.
      const left = Math.max(0, Math.floor((this.held.get(owner)?.until ?? 0) - monotonicNow()))
      watcher({ type: 'granted', token: BigInt(grant.token), ttlMs: left })
      this.lossOvertook(owner, grant.owner)
    })
  }

  remember(owner: string, body: GrantBody, ttlMs: number): void {
    const now = monotonicNow()
    if (++this.grantsSincePrune >= 256) {
      this.grantsSincePrune = 0
      for (const [other, held] of this.held) if (held.until + FORGET_AFTER_MS < now) this.forget(other)
    }
    // Counted from when the answer can have arrived, not from when it is read:
    // after a stall of this process the two differ by the stall.
    this.held.set(owner, {
      leaseId: body.leaseId, token: BigInt(body.token), digest: body.owner, until: earliestArrival() + body.ttlMs, session: undefined, sessionTtlMs: ttlMs, joinedAt: 0,
    })
    ownersByDigest.set(body.owner, owner)
    this.losses.need(true)
  }

  forget(owner: string): void {
    const mine = this.held.get(owner)
    if (!mine) return
    this.held.delete(owner)
    ownersByDigest.delete(mine.digest)
    if (this.held.size === 0) this.losses.need(false)
  }

  close(): void {
    this.losses.close()
  }

  /** Delivers (after the grant) a loss that arrived before it. */
  private lossOvertook(owner: string, digest: string): void {
    if (!takeLostEarly(digest)) return
    queueMicrotask(() => {
      if (!this.held.has(owner)) return
      this.forget(owner)
      this.watchers.get(owner)?.({ type: 'lost', reason: 'the baton server reports it lost (released by force, or taken over)' })
    })
  }
}
