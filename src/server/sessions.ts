import { randomBytes } from 'node:crypto'
import type { HoldRef } from '../core/driver.js'
import { sameToken, type Access } from './auth.js'
import { HttpError } from './http-errors.js'
import type { LeaseDesk } from './leases.js'
import { ownerDigest } from './lease-id.js'

/** Sessions at once on one server: each costs a record and its leases' records. */
export const MAX_SESSIONS = 100_000
/** Leases one session may renew; one keepalive renews them all in store batches. */
export const MAX_LEASES_PER_SESSION = 100_000
export const DEFAULT_SESSION_TTL_MS = 60_000
export const MAX_SESSION_TTL_MS = 60 * 60_000
const SWEEP_MS = 250

/** A lease renewed by its session's keepalive: the ref and the ttl it was asked with. */
interface SessionLease {
  ref: HoldRef
  readonly ttlMs: number
  /** Epoch ms the store's lease surely ends unless renewed (last grant or renewal). */
  until: number
}

/** A waiting acquire that proves its client alive through the session's keepalives. */
export interface SessionWait {
  /** The waiter's own ttl: without a keepalive for this long, its client is taken for dead. */
  readonly ttlMs: number
  readonly since: number
  leave(reason: string): void
}

export interface KeepaliveAnswer {
  sessionId: string
  /** The shortest lease the store set in this renewal (the session's ttl when it renews none). */
  ttlMs: number
  /** Leases the session still renews. */
  leases: number
  /** Owner digests of the session's leases the store no longer has (expired, forced, released elsewhere). */
  lost: string[]
  expiresAt: number
}

/** Who opened a session: only that token may act on it, and it counts against that token's quota. */
export interface SessionOpener {
  /** The opening token's identity (Access.identity); undefined on a server without tokens. */
  readonly identity: Buffer | undefined
  /** Gives the session back to its token's quota (called once, when the session is over). */
  readonly leave: () => void
}

class Session {
  touchedAt = Date.now()
  readonly leases = new Map<string, SessionLease>()
  readonly waits = new Set<SessionWait>()
  renewing: Promise<KeepaliveAnswer> | undefined
  constructor(readonly id: string, readonly ttlMs: number, readonly opener: SessionOpener) {}

  /** Idle for its ttl, waiting for nothing, and every lease surely over: nothing left to keep. */
  spent(now: number): boolean {
    if (now - this.touchedAt <= this.ttlMs || this.waits.size > 0) return false
    for (const lease of this.leases.values()) if (lease.until > now) return false
    return true
  }
}

/**
 * Client sessions (as an etcd lease or a Consul session): a client's leases
 * hang on one session, and one small keepalive request renews them all, so
 * a client's renewal costs one request per period whatever it holds (the
 * server renews the leases in its store in batches). A session also proves
 * its client alive for the acquires it has waiting: a waiter whose client
 * sends no keepalive for the waiter's own ttl leaves the line.
 *
 * A session never shortens a lease: when keepalives stop, its leases simply
 * are not renewed and end with their own ttl; the session is forgotten once
 * it has been idle for its ttl and every lease of it is over. Sessions live
 * on the server that made them (lease ids still work on every server).
 */
export class SessionTable {
  private readonly sessions = new Map<string, Session>()
  /** The session of each attached lease, by the lease's owner. */
  private readonly byOwner = new Map<string, Session>()
  private sweeper: NodeJS.Timeout | undefined

  constructor(
    private readonly desk: LeaseDesk,
    /** Told the longest lock delay + lease a renewal set (the restart delay of --data-dir follows it). */
    private readonly noteLease: (ms: number) => void = () => {},
  ) {}

  get size(): number {
    return this.sessions.size
  }

  create(ttlMs: number, opener: SessionOpener): { sessionId: string; ttlMs: number; expiresAt: number } {
    if (this.sessions.size >= MAX_SESSIONS) {
      opener.leave()
      throw new HttpError('TOO_MANY_WAITERS', `this server already keeps ${MAX_SESSIONS} sessions; retry later or on another server`, 1, 429)
    }
    const session = new Session(randomBytes(18).toString('base64url'), ttlMs, opener)
    this.sessions.set(session.id, session)
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), SWEEP_MS)
      this.sweeper.unref()
    }
    return { sessionId: session.id, ttlMs, expiresAt: session.touchedAt + ttlMs }
  }

  /**
   * The session, if `access` is the token that opened it. Another token
   * (read-only, another prefix's, another tenant's) is told exactly what an
   * unknown id gets: it learns nothing, not even that the id exists.
   */
  find(id: string, access: Access): Session | undefined {
    const session = this.sessions.get(id)
    return session && sameToken(access, session.opener.identity) ? session : undefined
  }

  /** The session, or 404 (never made here, over, or opened by another token). */
  demand(id: string, access: Access): Session {
    const session = this.find(id, access)
    if (!session) throw new HttpError('NOT_FOUND', 'no such session on this server for this token (it ended, another server or token opened it); open a new one')
    return session
  }

  /**
   * A lease its client renewed with the session's id (a batch extend): the
   * session's keepalives renew it from now on, to `ttlMs`. Leases join a
   * session only by a renewal the client asked for, so a lease taken without
   * auto-renewal is never renewed behind its holder's back.
   */
  attach(session: Session, ref: HoldRef, ttlMs: number, leftMs: number): boolean {
    if (this.sessions.get(session.id) !== session) return false
    const other = this.byOwner.get(ref.owner)
    if (other && other !== session) other.leases.delete(ref.owner)
    if (!session.leases.has(ref.owner) && session.leases.size >= MAX_LEASES_PER_SESSION) return false
    session.leases.set(ref.owner, { ref, ttlMs, until: Date.now() + leftMs })
    this.byOwner.set(ref.owner, session)
    return true
  }

  /** Whether `ref` is renewed by `session`. */
  has(session: Session, ref: { owner: string; token: bigint }): boolean {
    return session.leases.get(ref.owner)?.ref.token === ref.token
  }

  /** A released lease: no longer renewed. */
  detach(ref: { owner: string; token: bigint }): void {
    const session = this.byOwner.get(ref.owner)
    const lease = session?.leases.get(ref.owner)
    if (!session || !lease || lease.ref.token !== ref.token) return
    session.leases.delete(ref.owner)
    this.byOwner.delete(ref.owner)
  }

  /** A downgraded lease: renewed as read from now on. */
  replace(ref: HoldRef): void {
    const lease = this.byOwner.get(ref.owner)?.leases.get(ref.owner)
    if (lease && lease.ref.token === ref.token) lease.ref = ref
  }

  /** A waiting acquire of the session's client, until it ends (the returned function). */
  wait(session: Session, wait: SessionWait): () => void {
    session.waits.add(wait)
    return () => session.waits.delete(wait)
  }

  /**
   * Proof of life, and renewal of every lease of the session, in one store
   * batch per ttl. `giveUp`: leases its client has stopped counting on (it
   * took them for lost): released, not renewed.
   */
  async keepalive(session: Session, giveUp: readonly HoldRef[] = []): Promise<KeepaliveAnswer> {
    session.touchedAt = Date.now()
    for (const ref of giveUp) {
      if (!this.has(session, ref)) continue
      this.detach(ref)
      await this.desk.release(ref).catch(() => false)
    }
    // One renewal at a time per session: a keepalive sent while one runs shares its answer.
    return (session.renewing ??= this.renew(session).finally(() => (session.renewing = undefined)))
  }

  private async renew(session: Session): Promise<KeepaliveAnswer> {
    const byTtl = new Map<number, SessionLease[]>()
    for (const lease of session.leases.values()) {
      const group = byTtl.get(lease.ttlMs)
      if (group) group.push(lease)
      else byTtl.set(lease.ttlMs, [lease])
    }
    const lost: string[] = []
    let shortest = Infinity
    let longest = 0
    for (const [ttlMs, group] of byTtl) {
      const results = await this.desk.extend(group.map((lease) => lease.ref), ttlMs)
      const now = Date.now()
      group.forEach((lease, i) => {
        const result = results[i]!
        if (result.status === 'extended') {
          lease.until = now + result.ttlMs
          shortest = Math.min(shortest, result.ttlMs)
          longest = Math.max(longest, lease.ref.lockDelayMs + result.ttlMs)
          return
        }
        // Gone from the store; released through this server meanwhile is not a loss.
        if (session.leases.get(lease.ref.owner) !== lease) return
        session.leases.delete(lease.ref.owner)
        this.byOwner.delete(lease.ref.owner)
        lost.push(ownerDigest(lease.ref.owner))
      })
    }
    if (longest > 0) this.noteLease(longest)
    const ttlMs = Number.isFinite(shortest) ? shortest : session.ttlMs
    return { sessionId: session.id, ttlMs, leases: session.leases.size, lost, expiresAt: session.touchedAt + session.ttlMs }
  }

  /** Ends a session: releases every lease it renews; its waiting acquires leave the line. */
  async end(session: Session): Promise<number> {
    this.drop(session)
    for (const wait of session.waits) wait.leave('its session was ended (DELETE /v1/sessions)')
    let released = 0
    for (const lease of session.leases.values()) {
      if (await this.desk.release(lease.ref).catch(() => false)) released++
    }
    return released
  }

  close(): void {
    clearInterval(this.sweeper)
    this.sweeper = undefined
  }

  private drop(session: Session): void {
    if (this.sessions.get(session.id) === session) session.opener.leave()
    this.sessions.delete(session.id)
    for (const owner of session.leases.keys()) if (this.byOwner.get(owner) === session) this.byOwner.delete(owner)
    if (this.sessions.size === 0) this.close()
  }

  private sweep(): void {
    const now = Date.now()
    for (const session of this.sessions.values()) {
      for (const wait of session.waits) {
        if (now - Math.max(session.touchedAt, wait.since) > wait.ttlMs) {
          session.waits.delete(wait)
          wait.leave(`its client sent no keepalive for its ttl (${wait.ttlMs} ms): taken for dead`)
        }
      }
      if (session.spent(now)) this.drop(session)
    }
  }
}

export type { Session }
