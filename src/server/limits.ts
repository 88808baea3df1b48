import { parseDuration } from '../core/duration.js'
import { HttpError } from './http-errors.js'

export interface WaitCaps {
  /** Waiting acquire requests at once, all names together. */
  readonly total: number
  /** Waiting acquire requests at once for one name. */
  readonly perName: number
}

export const DEFAULT_WAIT_CAPS: WaitCaps = { total: 10_000, perName: 1_000 }

/**
 * Caps on long-polling acquires, so a flood of waiters can not exhaust the
 * server: over a cap, 429 with a Retry-After.
 */
export class WaitLimits {
  private count = 0
  private readonly byName = new Map<string, number>()

  constructor(private readonly caps: WaitCaps) {}

  get waiting(): number {
    return this.count
  }

  enter(name: string): void {
    const forName = this.byName.get(name) ?? 0
    if (this.count >= this.caps.total) {
      throw new HttpError('TOO_MANY_WAITERS', `this server already has ${this.caps.total} waiting requests; retry later or on another server`, 1)
    }
    if (forName >= this.caps.perName) {
      throw new HttpError('TOO_MANY_WAITERS', `"${name}" already has ${this.caps.perName} waiting requests on this server; retry later`, 1)
    }
    this.count += 1
    this.byName.set(name, forName + 1)
  }

  leave(name: string): void {
    this.count -= 1
    const forName = (this.byName.get(name) ?? 1) - 1
    if (forName === 0) this.byName.delete(name)
    else this.byName.set(name, forName)
  }
}

/** The server's caps on what one request may ask for. */
export interface LeaseCaps {
  /** Longest ttl a grant, renewal or session may ask for. */
  readonly maxTtlMs: number
  /** Longest lock delay an acquire may ask for. */
  readonly maxLockDelayMs: number
}

/**
 * Defaults: renewals keep a lease held for as long as its client lives, so a
 * ttl only needs to outlast a renewal hiccup; these bound how long one
 * tenant's dead client (or a restart) can keep a name from everyone.
 */
export const DEFAULT_LEASE_CAPS: LeaseCaps = { maxTtlMs: 5 * 60_000, maxLockDelayMs: 60_000 }

/** The ttl of a grant that asks none, unless --max-ttl is shorter (then the cap). */
export const DEFAULT_TTL_MS = 30_000

export const defaultTtlOf = (caps: LeaseCaps): number => Math.min(DEFAULT_TTL_MS, caps.maxTtlMs)

/**
 * How long a server that keeps no state waits after a start: the longest
 * lease a previous run could have granted. Its --max-ttl (assumed the same),
 * or 30 s when that is more: servers before the default was clamped to the
 * cap granted 30 s to an acquire that asked no ttl, whatever the cap; and
 * its lock delay after that.
 */
export const restartWaitOf = (caps: LeaseCaps): number => Math.max(caps.maxTtlMs, DEFAULT_TTL_MS) + caps.maxLockDelayMs

/** 400 when a request asks for a ttl or lock delay above the caps; unparsable values are left to the route. */
export function checkCaps(caps: LeaseCaps, body: unknown): void {
  if (!body || typeof body !== 'object') return
  const { ttl, lockDelay } = body as { ttl?: unknown; lockDelay?: unknown }
  const over = (value: unknown, cap: number, field: string, flag: string) => {
    if (value === undefined) return
    let asked: number
    try {
      asked = parseDuration(value as number | string, field, { allowZero: true })
    } catch {
      return
    }
    if (asked > cap) throw new HttpError('INVALID_ARGUMENT', `"${field}" may be at most ${formatMs(cap)} on this server (${flag}), got ${formatMs(asked)}`)
  }
  over(ttl, caps.maxTtlMs, 'ttl', '--max-ttl')
  over(lockDelay, caps.maxLockDelayMs, 'lockDelay', '--max-lock-delay')
}

function formatMs(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}

/** What one token (one tenant; on an open server, everyone together) may have at once on this server. */
export interface TenantQuotas {
  /** Waiting acquire requests. */
  readonly waiters: number
  /** Open event streams. */
  readonly streams: number
  /** Leases granted through this server and not yet released, expired or lost. */
  readonly holds: number
  /** Client sessions open on this server (until ended, or idle for their ttl with every lease over). */
  readonly sessions: number
}

/**
 * Waiters: a quarter of the server's, so no one token can fill the line for
 * everyone. Sessions: an http:// client process opens one (and a new one
 * after a server restart, while the old one lingers for its ttl), so 1,024
 * is four times the event streams a token's holding clients keep open (one
 * each), and a hundred tokens at their quota still fit under the server's
 * MAX_SESSIONS (src/server/sessions.ts).
 */
export const DEFAULT_TENANT_QUOTAS: TenantQuotas = { waiters: DEFAULT_WAIT_CAPS.total / 4, streams: 256, holds: 100_000, sessions: 1024 }

type QuotaKind = keyof TenantQuotas
const WHAT: Record<QuotaKind, string> = { waiters: 'waiting acquires', streams: 'open event streams', holds: 'held leases', sessions: 'open sessions' }

/**
 * Per-token quotas: over one, 429 with a Retry-After, for that token only.
 * Holds are counted from grant to release, expiry or loss (by owner, as the
 * lease desk reports them).
 */
export class Quotas {
  private readonly used = new Map<string, Record<QuotaKind, number>>()
  private readonly holders = new Map<string, string>()

  constructor(private readonly quotas: TenantQuotas) {}

  /** Takes one of `kind` for `tenant`, or 429; the function gives it back (once). */
  enter(tenant: string, kind: QuotaKind): () => void {
    this.check(tenant, kind)
    const used = this.of(tenant)
    used[kind] += 1
    let left = false
    return () => {
      if (left) return
      left = true
      this.give(tenant, kind)
    }
  }

  /** 429 if `tenant` has used up `kind`, or (`more`) has no room for that many more. */
  check(tenant: string, kind: QuotaKind, more = 1): void {
    const used = this.used.get(tenant)?.[kind] ?? 0
    if (used + more > this.quotas[kind]) {
      const why = more > 1 ? `has ${used} of its ${this.quotas[kind]} ${WHAT[kind]} on this server (its quota) and this request takes ${more}` : `already has ${this.quotas[kind]} ${WHAT[kind]} on this server (its quota)`
      throw new HttpError('QUOTA_EXCEEDED', `this token ${why}; retry later`, 1)
    }
  }

  /**
   * Leases the store just granted to `tenant`: counted until ended(owner), or
   * 429 (counting none) when they would take it past its quota. Checked and
   * counted in one step after the grant, so a burst of requests that all
   * passed the check before their store call can not all be counted in.
   */
  admit(tenant: string, owners: readonly string[]): void {
    const added = owners.filter((owner) => !this.holders.has(owner))
    if (added.length === 0) return
    this.check(tenant, 'holds', added.length)
    for (const owner of added) this.held(tenant, owner)
  }

  /** A lease granted to `tenant`: counted until ended(owner). */
  held(tenant: string, owner: string): void {
    if (this.holders.has(owner)) return
    this.holders.set(owner, tenant)
    this.of(tenant).holds += 1
  }

  /** A lease released, expired or lost. */
  ended(owner: string): void {
    const tenant = this.holders.get(owner)
    if (tenant === undefined) return
    this.holders.delete(owner)
    this.give(tenant, 'holds')
  }

  private of(tenant: string): Record<QuotaKind, number> {
    let used = this.used.get(tenant)
    if (!used) this.used.set(tenant, (used = { waiters: 0, streams: 0, holds: 0, sessions: 0 }))
    return used
  }

  private give(tenant: string, kind: QuotaKind): void {
    const used = this.used.get(tenant)
    if (!used) return
    used[kind] -= 1
    if (used.waiters === 0 && used.streams === 0 && used.holds === 0 && used.sessions === 0) this.used.delete(tenant)
  }
}
