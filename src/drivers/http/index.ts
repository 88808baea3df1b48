import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Agent } from 'node:https'
import { createSecureContext, rootCertificates } from 'node:tls'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult, HoldRef,
  ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { limitOf } from '../../core/list.js'
import { backendUnavailable, invalidArgument } from '../../core/errors.js'
import { weightField, weightOf } from '../../core/compat.js'
import { earliestArrival, monotonicNow, watchForStalls } from '../../core/clock.js'
import { safetyMarginMs } from '../../core/margin.js'
import type { StoreUrl } from '../../core/url.js'
import { Api, toApiError, unexpected, type ApiError } from './api.js'
import { LossStream } from './loss-stream.js'
import { LeaderStream } from './leader-stream.js'
import { ClientSession } from './session.js'

/** What the server answers for a grant. */
export interface GrantBody {
  leaseId: string
  token: string
  ttlMs: number
  owner: string
  mode: string
}
type HolderBody = { owner: string; token: string; mode: LockInfo['holders'][number]['mode']; weight?: number; expiresAt: number; description?: string; since?: number; value?: string }
type WaiterBody = { owner: string; mode: LockInfo['holders'][number]['mode']; weight?: number; description?: string; since?: number }
interface LockBody {
  name: string
  kind: LockInfo['kind']
  fair: boolean
  permits: number
  holders: HolderBody[]
  waiters: WaiterBody[]
  lastToken: string
}

/** A hold this client has through the server. */
interface Held {
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

/** Lease ids given up in one keepalive, well under the server's body limit; the rest go with the next one. */
const MAX_GIVE_UP = 200

/** Per-lease renewals go in requests of at most this many bytes of lease ids, well under the server's body limit. */
const EXTEND_CHUNK_BYTES = 32 * 1024

/** Holds past their end by this much are forgotten even if never released (a lease left to expire). */
const FORGET_AFTER_MS = 60_000

/** A waiting acquire: one streamed request that is in the server's line. */
interface Poll {
  readonly waitId: string
  readonly controller: AbortController
  /** Settles when the request ends: the grant, null (not granted), or a failure. */
  readonly done: Promise<GrantBody | null>
  stale: NodeJS.Timeout
  /** The ttl asked: a grant that raced with leaving is remembered with it. */
  readonly ttlMs: number
  /** The session whose keepalives prove this waiter alive on the server. */
  readonly session: string | undefined
}

/** How long a waiting request may wait on the server; the core cancels it sooner when its own wait ends. */
const POLL_WAIT_MS = 10 * 60_000

/**
 * Owner digests the server shows, mapped back to this process's owners, so
 * that inspect() shows a client its own holds under the owners it knows.
 * Process-wide: several clients of one process see each other's holds as
 * they would on any other store.
 */
const ownersByDigest = new Map<string, string>()

/**
 * Digests reported lost before this process knew them: the event stream and
 * the answer with the grant travel on different connections, so a forced
 * release can overtake its grant. Kept for a while, then dropped.
 */
const lostEarly = new Map<string, number>()
const LOST_EARLY_MS = 60_000

function noteLostEarly(digest: string): void {
  const now = Date.now()
  if (lostEarly.size > 10_000) for (const [d, at] of lostEarly) if (now - at > LOST_EARLY_MS) lostEarly.delete(d)
  lostEarly.set(digest, now)
}

/**
 * `http://` / `https://`: a baton server as a store. One attempt is one
 * request; waiting is one streamed long-poll that first says "in line", then
 * brings the grant (a hand-over wake-up); renewals go as one batch request;
 * losses (forced release) come over one event stream. Owners here are this
 * client's; the server's owners stay on the server, inside lease ids.
 */
export class HttpDriver implements Driver {
  readonly store = 'http'
  private readonly held = new Map<string, Held>()
  private readonly polls = new Map<string, Poll>()
  private readonly watchers = new Map<string, (wake: Wake) => void>()
  private readonly losses: LossStream
  private readonly session: ClientSession
  private grantsSincePrune = 0

  constructor(private readonly api: Api, readonly capabilities: Capabilities, sessions = true) {
    this.losses = new LossStream(api, (digest, reason) => this.lost(digest, reason), () => {
      // The core re-reads a hold told "retry" (src/core/lease.ts).
      for (const owner of [...this.held.keys()]) this.watchers.get(owner)?.({ type: 'retry' })
    })
    this.session = new ClientSession(api, sessions, (digests) => {
      for (const digest of digests) this.lost(digest, 'the baton server reports it lost at its session\'s keepalive (it expired or was taken)')
    })
  }

  private lost(digest: string, reason: string): void {
    const owner = ownersByDigest.get(digest)
    if (owner === undefined || !this.held.has(owner)) return noteLostEarly(digest)
    this.forget(owner)
    this.watchers.get(owner)?.({ type: 'lost', reason })
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    // Before any answer can come: a grant read after a stall is counted from before it.
    watchForStalls()
    const mine = this.held.get(request.owner)
    // What is left of the lease, not a fresh one: this answers a retry after a stall too.
    // A lease already over (read after a stall) is no hold: ask the server afresh.
    if (mine && mine.until > monotonicNow()) return { status: 'granted', token: mine.token, ttlMs: Math.floor(mine.until - monotonicNow()) }
    if (mine) this.forget(request.owner)
    const poll = this.polls.get(request.owner)
    if (poll) {
      this.keepPoll(request.owner, poll, request.queueTtlMs)
      return { status: 'busy', retryAfterMs: request.queueTtlMs }
    }
    if (!request.enqueue) {
      const answer = await this.api.call<GrantBody>('POST', lockPath(request.name, '/acquire'), acquireBody(request, 0, undefined))
      return answer.ok ? this.granted(request, answer.body) : this.notGranted(answer.error)
    }
    return this.startPoll(request)
  }

  /**
   * Leases on this client's session are renewed by one shared keepalive,
   * whatever their count. The others (not renewed yet, another ttl asked, a
   * server that lost the session) go in batch requests kept under the
   * server's body limit, sent with the session's id so that they join it.
   */
  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const results: ExtendResult[] = holds.map(() => ({ status: 'lost' }))
    const session = this.session.id
    const onSession: number[] = []
    const single: number[] = []
    holds.forEach((hold, i) => {
      const mine = this.held.get(hold.owner)
      if (!mine || mine.token !== hold.token) return
      if (session !== undefined && mine.session === session && mine.sessionTtlMs === ttlMs) onSession.push(i)
      else single.push(i)
    })
    if (onSession.length > 0) {
      const joinedAt = Math.max(...onSession.map((i) => this.held.get(holds[i]!.owner)?.joinedAt ?? 0))
      const renewal = await this.session.keepalive(session!, joinedAt, ttlMs / 3, () => this.givenUp(session!))
      if (renewal) {
        const leftMs = Math.min(ttlMs, renewal.ttlMs) - (monotonicNow() - renewal.sentAt)
        for (const i of onSession) {
          const mine = this.held.get(holds[i]!.owner)
          // Gone: the keepalive reported it lost (its holder was told), or it was released meanwhile.
          if (!mine || mine.token !== holds[i]!.token) continue
          results[i] = { status: 'extended', ttlMs: Math.max(0, Math.floor(leftMs)) }
          mine.until = renewal.sentAt + Math.min(ttlMs, renewal.ttlMs)
        }
      } else {
        // The server no longer has this session: renew these one by one, joining a new session.
        single.push(...onSession)
      }
    }
    if (single.length === 0) return results
    const joining = await this.session.current().catch(() => undefined)
    for (const chunk of chunksOf(single, (i) => this.held.get(holds[i]!.owner)!.leaseId.length + 3, EXTEND_CHUNK_BYTES)) {
      await this.extendEach(holds, chunk, ttlMs, results, joining)
    }
    return results
  }

  /**
   * Leases on `session` this client no longer counts on (the core took them
   * for lost, so no renewal was asked for them in time): the keepalive
   * releases them rather than renewing a hold nobody uses.
   */
  private givenUp(session: string): string[] {
    const now = monotonicNow()
    const ids: string[] = []
    for (const mine of this.held.values()) {
      if (ids.length >= MAX_GIVE_UP) break
      if (mine.session !== session || mine.until - safetyMarginMs(mine.sessionTtlMs) > now) continue
      mine.session = undefined
      ids.push(mine.leaseId)
    }
    return ids
  }

  /** One batch request renewing the leases of `holds` at `indexes`, results written into `results`. */
  private async extendEach(
    holds: readonly HoldRef[], indexes: readonly number[], ttlMs: number, results: ExtendResult[], session: string | undefined,
  ): Promise<void> {
    const leases = indexes.map((i) => this.held.get(holds[i]!.owner)!.leaseId)
    const answer = await this.api.call<{ session?: boolean; results: { status: string; ttlMs?: number }[] }>(
      'POST', '/v1/leases/extend', { leases, ttl: ttlMs, ...(session !== undefined ? { session } : {}) },
    )
    if (!answer.ok) unexpected(answer.error)
    const now = monotonicNow()
    if (session !== undefined && answer.body.session === false) this.session.reset(session)
    indexes.forEach((i, n) => {
      const result = answer.body.results[n]
      const owner = holds[i]!.owner
      if (result?.status === 'extended' && result.ttlMs !== undefined) {
        results[i] = { status: 'extended', ttlMs: result.ttlMs }
        const mine = this.held.get(owner)
        if (!mine) return
        mine.until = now + result.ttlMs
        if (session !== undefined && answer.body.session === true) {
          mine.session = session
          mine.sessionTtlMs = ttlMs
          mine.joinedAt = now
        }
      } else this.forget(owner)
    })
  }

  /** Forgets the lease only once the server confirmed: a release that failed can be retried and reach it. */
  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const poll = this.polls.get(hold.owner)
    if (poll) await this.cancelPoll(hold.owner, poll)
    const mine = this.held.get(hold.owner)
    if (!mine || ('token' in hold && hold.token !== mine.token && !poll)) return false
    // The lease id goes in the body, not the path: proxies log paths, and a lease id is a credential.
    const answer = await this.api.call<{ released: boolean }>('POST', '/v1/leases/release', { leaseId: mine.leaseId })
    if (!answer.ok) unexpected(answer.error)
    if (this.held.get(hold.owner) === mine) this.forget(hold.owner)
    return answer.body.released
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const mine = this.held.get(hold.owner)
    if (!mine || mine.token !== hold.token) return false
    const answer = await this.api.call<GrantBody>('POST', '/v1/leases/downgrade', { leaseId: mine.leaseId })
    if (!answer.ok) {
      if (answer.error.status === 410) return false
      unexpected(answer.error)
    }
    mine.leaseId = answer.body.leaseId
    return true
  }

  /** POST /v1/elections/{name}/proclaim with the hold's lease id; false when the server says the lease is gone. */
  async proclaim(hold: HoldRef, value: string): Promise<boolean> {
    const mine = this.held.get(hold.owner)
    if (!mine || mine.token !== hold.token) return false
    const answer = await this.api.call<{ proclaimed: boolean }>('POST', `/v1/elections/${encodeURIComponent(hold.name)}/proclaim`, { leaseId: mine.leaseId, value })
    if (!answer.ok) {
      if (answer.error.status === 410) return false
      unexpected(answer.error)
    }
    return answer.body.proclaimed
  }

  /** One leader event stream per observed name (src/drivers/http/leader-stream.ts), shared by its observers. */
  private readonly leaderStreams = new Map<string, { stream: LeaderStream; observers: Set<() => void> }>()

  observe(name: string, onChange: () => void): () => void {
    let entry = this.leaderStreams.get(name)
    if (!entry) {
      const observers = new Set<() => void>()
      entry = { observers, stream: new LeaderStream(this.api, name, () => { for (const each of observers) each() }) }
      this.leaderStreams.set(name, entry)
    }
    const mine = () => onChange()
    const { observers, stream } = entry
    observers.add(mine)
    return () => {
      observers.delete(mine)
      if (observers.size > 0 || this.leaderStreams.get(name)?.stream !== stream) return
      this.leaderStreams.delete(name)
      stream.close()
    }
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    this.watchers.set(owner, onWake)
    return () => {
      if (this.watchers.get(owner) === onWake) this.watchers.delete(owner)
    }
  }

  async inspect(name: string): Promise<LockInfo | null> {
    const answer = await this.api.call<LockBody>('GET', lockPath(name, ''))
    if (!answer.ok) {
      if (answer.error.status === 404 && answer.error.code === 'NOT_FOUND') return null
      unexpected(answer.error)
    }
    return lockInfo(answer.body)
  }

  /** The server's pages (its cursor is the last name of a page, base64url), up to the limit asked. */
  async *list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    let cursor = page?.after === undefined ? undefined : Buffer.from(page.after).toString('base64url')
    let left = limitOf(page)
    while (left > 0) {
      const size = Math.min(1000, left)
      const query = new URLSearchParams({ prefix, limit: String(size), ...(cursor ? { cursor } : {}) })
      const answer = await this.api.call<{ locks: LockBody[]; nextCursor?: string }>('GET', `/v1/locks?${query}`)
      if (!answer.ok) unexpected(answer.error)
      for (const lock of answer.body.locks) yield lockInfo(lock)
      left -= answer.body.locks.length
      cursor = answer.body.nextCursor
      if (!cursor) return
    }
  }

  async forceRelease(name: string): Promise<boolean> {
    const answer = await this.api.call<{ released: boolean }>('DELETE', lockPath(name, ''))
    if (!answer.ok) unexpected(answer.error)
    return answer.body.released
  }

  /** Leaves every line; held leases stay on the server until their ttl, like any client that goes away. */
  async close(): Promise<void> {
    await Promise.all([...this.polls].map(([owner, poll]) => this.cancelPoll(owner, poll)))
    this.losses.close()
    for (const { stream } of this.leaderStreams.values()) stream.close()
    this.leaderStreams.clear()
    this.api.close()
  }

  /** Once the loss stream is open, so a forced release right after the grant still reaches the holder. */
  private async granted(request: AcquireRequest, body: GrantBody): Promise<AcquireResult> {
    const owner = request.owner
    this.remember(owner, body, request.ttlMs)
    await this.losses.opened
    this.lossOvertook(owner, body.owner)
    return { status: 'granted', token: BigInt(body.token), ttlMs: body.ttlMs }
  }

  /** Delivers (after the grant) a loss that arrived before it. */
  private lossOvertook(owner: string, digest: string): void {
    if (!lostEarly.delete(digest)) return
    queueMicrotask(() => {
      if (!this.held.has(owner)) return
      this.forget(owner)
      this.watchers.get(owner)?.({ type: 'lost', reason: 'the baton server reports it lost (released by force, or taken over)' })
    })
  }

  private remember(owner: string, body: GrantBody, ttlMs: number): void {
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

  private forget(owner: string): void {
    const mine = this.held.get(owner)
    if (!mine) return
    this.held.delete(owner)
    ownersByDigest.delete(mine.digest)
    if (this.held.size === 0) this.losses.need(false)
  }

  private notGranted(error: ApiError): AcquireResult {
    if (error.code === 'LOCK_TIMEOUT') return { status: 'busy', retryAfterMs: 1 }
    if (error.status === 429) return { status: 'busy', retryAfterMs: error.retryAfterMs ?? 1000 }
    if (error.status === 400 && error.code === 'INVALID_ARGUMENT') return { status: 'conflict', detail: error.message }
    unexpected(error)
  }

  /**
   * Sends the waiting request and returns once the server says where it
   * stands: granted at once, or in line (then the grant comes later as a
   * wake-up), or refused. The server's first line must come within the
   * command timeout; after it, heartbeat lines keep a quiet wait alive.
   */
  private async startPoll(request: AcquireRequest): Promise<AcquireResult> {
    const waitId = randomBytes(18).toString('base64url')
    const controller = new AbortController()
    const session = await this.session.current()
    const opened = this.openPoll(request, waitId, session, controller.signal)
    let late: NodeJS.Timeout | undefined
    const inTime = await Promise.race([opened, new Promise<undefined>((resolve) => (late = setTimeout(() => resolve(undefined), this.api.timeoutMs)))])
      .catch((cause: unknown) => {
        throw backendUnavailable('baton server', cause)
      })
      .finally(() => clearTimeout(late))
    if (!inTime) {
      // No first line within the command timeout (a slow or frozen server): the
      // request may be in line, so it stays open as this owner's poll; its answer
      // comes as a wake-up, and the core's deadline bounds the wait.
      const seen: { digest?: string } = {}
      const done = opened.then((first) => this.restOfPoll(request.owner, first, seen), () => null)
      this.watchPoll(request, { waitId, controller, done, stale: undefined as unknown as NodeJS.Timeout, ttlMs: request.ttlMs, session }, seen)
      return { status: 'busy', retryAfterMs: request.queueTtlMs }
    }
    const { response, lines, first } = inTime
    const answer = first as { state?: string; owner?: string; leaseId?: string; error?: unknown } | undefined
    if (!response.ok || !answer || answer.error || !answer.state) {
      // Read to the end rather than abort, so the connection stays in the keep-alive pool.
      await drain(lines)
      if (answer?.leaseId) return this.granted(request, answer as GrantBody)
      const error = toApiError(response.ok ? 503 : response.status, JSON.stringify(answer ?? {}), response.headers.get('retry-after'))
      // The server no longer has the session (it restarted): the next attempt opens a new one.
      if (session !== undefined && error.status === 404) {
        this.session.reset(session)
        return { status: 'busy', retryAfterMs: 1 }
      }
      return this.notGranted(error)
    }
    // In line: the rest of the stream is heartbeats, then the grant (or the end of the wait).
    const seen: { digest?: string } = {}
    const done = this.restOfPoll(request.owner, inTime, seen)
    this.watchPoll(request, { waitId, controller, done, stale: undefined as unknown as NodeJS.Timeout, ttlMs: request.ttlMs, session }, seen)
    return { status: 'busy', retryAfterMs: request.queueTtlMs }
  }

  /** Sends the waiting request; resolves with its first line (undefined if none). */
  private async openPoll(request: AcquireRequest, waitId: string, session: string | undefined, signal: AbortSignal) {
    const response = await this.api.fetch(lockPath(request.name, '/acquire'), {
      method: 'POST',
      headers: this.api.headers({ 'content-type': 'application/json', accept: 'application/x-ndjson' }),
      body: JSON.stringify({ ...acquireBody(request, POLL_WAIT_MS, session), waitId }),
      signal,
    })
    const lines = readLines(response)
    const next = await lines.next()
    return { response, lines, first: next.done ? undefined : next.value }
  }

  /** The grant a poll's stream ends with, or null; `seen.digest`: the owner digest of its "in line" line. */
  private async restOfPoll(
    owner: string, opened: { response: Response; lines: AsyncGenerator<unknown>; first: unknown }, seen: { digest?: string },
  ): Promise<GrantBody | null> {
    const { response, lines } = opened
    const first = opened.first as { state?: string; owner?: string; leaseId?: string; error?: unknown } | undefined
    try {
      if (!response.ok || !first || first.error || !first.state) {
        await drain(lines)
        return first?.leaseId ? (first as GrantBody) : null
      }
      // The digest lets inspect() show this waiter under the owner this client knows.
      if (first.owner) {
        seen.digest = first.owner
        ownersByDigest.set(first.owner, owner)
      }
      const body = await nextAnswer(lines)
      await drain(lines)
      return body?.leaseId ? (body as GrantBody) : null
    } catch {
      return null
    }
  }

  /** Keeps `poll` as the owner's waiting request until it ends: its grant is delivered as a hand-over wake-up. */
  private watchPoll(request: AcquireRequest, poll: Poll, seen: { digest?: string }): void {
    this.polls.set(request.owner, poll)
    this.keepPoll(request.owner, poll, request.queueTtlMs)
    void poll.done.then((grant) => {
      const digest = seen.digest
      if (!grant && digest && ownersByDigest.get(digest) === request.owner) ownersByDigest.delete(digest)
      if (this.polls.get(request.owner) !== poll) return
      this.polls.delete(request.owner)
      clearTimeout(poll.stale)
      if (!grant) return this.watchers.get(request.owner)?.({ type: 'retry' })
      this.remember(request.owner, grant, request.ttlMs)
      void this.losses.opened.then(() => {
        const watcher = this.watchers.get(request.owner)
        if (!watcher) return void this.release({ ...request }).catch(() => {})
        // What is left by this process's count (from before any stall the answer sat through),
        // not the full ttl: the core's refresh attempts answer busy without asking the server,
        // so a wake-up after them does not prove the grant came after them.
        const left = Math.max(0, Math.floor((this.held.get(request.owner)?.until ?? 0) - monotonicNow()))
        watcher({ type: 'granted', token: BigInt(grant.token), ttlMs: left })
        this.lossOvertook(request.owner, grant.owner)
      })
    })
  }

  /**
   * The core refreshes its line entry: the waiter is alive. A waiter the core
   * stops refreshing (it went away without leaving) leaves the line after
   * queueTtlMs; on the server, a session's keepalive is the proof of life
   * that keeps its waiting requests in line (a frozen client's do not stay).
   */
  private keepPoll(owner: string, poll: Poll, queueTtlMs: number): void {
    clearTimeout(poll.stale)
    poll.stale = setTimeout(() => void this.cancelPoll(owner, poll), queueTtlMs)
    poll.stale.unref()
    if (poll.session !== undefined) this.session.keepalive(poll.session, 0, queueTtlMs / 4).catch(() => {})
  }

  /** Leaves the line and waits until the server confirms; a grant that raced with it is kept (release() then frees it). */
  private async cancelPoll(owner: string, poll: Poll): Promise<void> {
    if (this.polls.get(owner) === poll) this.polls.delete(owner)
    clearTimeout(poll.stale)
    await this.api.call('DELETE', `/v1/waits/${poll.waitId}`).catch(() => {})
    poll.controller.abort()
    const grant = await poll.done
    if (grant) this.remember(owner, grant, poll.ttlMs)
  }
}

/** The line after the heartbeats: the grant, an error, or undefined when the stream ended. */
async function nextAnswer(lines: AsyncGenerator<unknown>): Promise<{ leaseId?: string } | undefined> {
  for (;;) {
    const next = await lines.next()
    if (next.done) return undefined
    const line = next.value as { state?: string; leaseId?: string }
    if (line.state === 'waiting' && line.leaseId === undefined) continue
    return line
  }
}

/** Groups `items` so that each group's summed `size` stays under `limit` (an item larger than it goes alone). */
function chunksOf<T>(items: readonly T[], size: (item: T) => number, limit: number): T[][] {
  const chunks: T[][] = []
  let current: T[] = []
  let bytes = 0
  for (const item of items) {
    const itemBytes = size(item)
    if (current.length > 0 && bytes + itemBytes > limit) {
      chunks.push(current)
      current = []
      bytes = 0
    }
    current.push(item)
    bytes += itemBytes
  }
  if (current.length > 0) chunks.push(current)
  return chunks
}

function acquireBody(request: AcquireRequest, waitMs: number, session: string | undefined): Record<string, unknown> {
  return {
    ttl: request.ttlMs, wait: waitMs, mode: request.mode, fair: request.fair,
    ...(request.mode === 'permit' ? { permits: request.permits } : {}),
    ...(request.mode === 'permit' && weightOf(request) > 1 ? { weight: weightOf(request) } : {}),
    ...(request.lockDelayMs > 0 ? { lockDelay: request.lockDelayMs } : {}),
    ...(session !== undefined ? { session } : {}),
    ...(request.description !== undefined ? { description: request.description } : {}),
    ...(request.value !== undefined ? { value: request.value } : {}),
  }
}

function lockPath(name: string, suffix: string): string {
  return `/v1/locks/${encodeURIComponent(name)}${suffix}`
}

function lockInfo(body: LockBody): LockInfo {
  const owner = (digest: string) => ownersByDigest.get(digest) ?? digest
  return {
    name: body.name, kind: body.kind, fair: body.fair, permits: body.permits,
    holders: body.holders.map((h) => ({
      owner: owner(h.owner), token: BigInt(h.token), mode: h.mode, ...weightField(h.mode, h.weight), expiresAt: h.expiresAt, ...described(h),
      ...(h.value !== undefined ? { value: h.value } : {}),
    })),
    waiters: body.waiters.map((w) => ({ owner: owner(w.owner), mode: w.mode, ...weightField(w.mode, w.weight), ...described(w) })),
    lastToken: BigInt(body.lastToken),
  }
}

/** The optional "who" fields of a holder or waiter, when the server sent them. */
function described(entry: { description?: string; since?: number }): { description?: string; since?: number } {
  return { ...(entry.description !== undefined ? { description: entry.description } : {}), ...(entry.since !== undefined ? { since: entry.since } : {}) }
}

async function drain(lines: AsyncGenerator<unknown>): Promise<void> {
  try {
    while (!(await lines.next()).done) {
      // nothing more is expected after the answer
    }
  } catch {
    // the connection went; nothing to keep
  }
}

/** NDJSON lines of a response body, parsed. */
async function* readLines(response: Response): AsyncGenerator<unknown> {
  if (!response.body) return
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true })
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (line) yield JSON.parse(line)
    }
  }
  if (buffered.trim()) yield JSON.parse(buffered)
}

/**
 * `https://…?ca=/path/ca.pem` trusts a private CA besides the system's (as
 * `rediss://…?ca=` does); `&cert=/path/client.crt&key=/path/client.key`
 * presents a client certificate (a server started with --tls-ca asks for
 * one). Undefined when none is given: the built-in fetch and the system's CAs.
 */
function tlsAgent(url: StoreUrl): Agent | undefined {
  const [ca, cert, key] = (['ca', 'cert', 'key'] as const).map((name) => url.params.get(name) ?? undefined)
  if (ca === undefined && cert === undefined && key === undefined) return undefined
  if (url.scheme !== 'https') throw invalidArgument(`${url.display}: "ca", "cert" and "key" are TLS settings, for an https:// URL`)
  if ((cert === undefined) !== (key === undefined)) throw invalidArgument(`${url.display}: "cert" and "key" go together (a client certificate and its private key)`)
  const read = (name: string, path: string) => {
    try {
      return readFileSync(path)
    } catch (cause) {
      throw invalidArgument(`"${name}" in ${url.display} names a file that can not be read: ${path}`, cause)
    }
  }
  const settings = {
    ...(ca !== undefined ? { ca: [...rootCertificates, read('ca', ca).toString('utf8')] } : {}),
    ...(cert !== undefined && key !== undefined ? { cert: read('cert', cert), key: read('key', key) } : {}),
  }
  try {
    createSecureContext(settings)
  } catch (cause) {
    throw invalidArgument(`${url.display}: the files of "ca", "cert", "key" do not make a TLS context: ${(cause as Error).message}`, cause)
  }
  return new Agent({ keepAlive: true, ...settings })
}

export const createHttpDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const [host] = url.hosts
  if (!host || url.hosts.length > 1) throw invalidArgument(`the store URL ${url.display} must name one baton server: http://[:token@]host:port`)
  const hostPart = host.host.includes(':') ? `[${host.host}]` : host.host
  const base = `${url.scheme}://${hostPart}${host.port ? `:${host.port}` : ''}${url.path ? `/${url.path.replace(/\/$/, '')}` : ''}`
  const api = new Api(base, url.password || url.username || undefined, options.commandTimeoutMs, tlsAgent(url))
  const info = await api.call<{ capabilities: Capabilities }>('GET', '/v1/info', undefined, AbortSignal.timeout(options.connectTimeoutMs))
  if (!info.ok) unexpected(info.error)
  const session = url.params.get('session') ?? 'true'
  if (!['true', 'false'].includes(session)) throw invalidArgument(`${url.display}: "session" must be true or false, got "${session}"`)
  // Hand-overs reach this client as the answer to its waiting request, whatever the server's store does.
  return new HttpDriver(api, { ...info.body.capabilities, handoff: true }, session === 'true')
}
