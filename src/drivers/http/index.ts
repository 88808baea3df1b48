import { randomBytes } from 'node:crypto'
import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult, HoldRef,
  ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { limitOf } from '../../core/list.js'
import { backendUnavailable, invalidArgument } from '../../core/errors.js'
import { monotonicNow } from '../../core/clock.js'
import type { StoreUrl } from '../../core/url.js'
import { Api, toApiError, unexpected, type ApiError } from './api.js'
import { LossStream } from './loss-stream.js'

/** What the server answers for a grant. */
export interface GrantBody {
  leaseId: string
  token: string
  ttlMs: number
  owner: string
  mode: string
}
interface LockBody {
  name: string
  kind: LockInfo['kind']
  fair: boolean
  permits: number
  holders: { owner: string; token: string; mode: LockInfo['holders'][number]['mode']; expiresAt: number }[]
  waiters: { owner: string; mode: LockInfo['holders'][number]['mode'] }[]
  lastToken: string
}

/** A hold this client has through the server. */
interface Held {
  leaseId: string
  token: bigint
  digest: string
  /** Monotonic ms after which the server has surely let it go (unless renewed). */
  until: number
}

/** Holds past their end by this much are forgotten even if never released (a lease left to expire). */
const FORGET_AFTER_MS = 60_000

/** A waiting acquire: one streamed request that is in the server's line. */
interface Poll {
  readonly waitId: string
  readonly controller: AbortController
  /** Settles when the request ends: the grant, null (not granted), or a failure. */
  readonly done: Promise<GrantBody | null>
  stale: NodeJS.Timeout
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
  private grantsSincePrune = 0

  constructor(private readonly api: Api, readonly capabilities: Capabilities) {
    this.losses = new LossStream(api, (digest, reason) => {
      const owner = ownersByDigest.get(digest)
      if (owner === undefined || !this.held.has(owner)) return noteLostEarly(digest)
      this.forget(owner)
      this.watchers.get(owner)?.({ type: 'lost', reason })
    })
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const mine = this.held.get(request.owner)
    if (mine) return { status: 'granted', token: mine.token, ttlMs: request.ttlMs }
    const poll = this.polls.get(request.owner)
    if (poll) {
      this.keepPoll(request.owner, poll, request.queueTtlMs)
      return { status: 'busy', retryAfterMs: request.queueTtlMs }
    }
    if (!request.enqueue) {
      const answer = await this.api.call<GrantBody>('POST', lockPath(request.name, '/acquire'), acquireBody(request, 0))
      return answer.ok ? this.granted(request.owner, answer.body) : this.notGranted(answer.error)
    }
    return this.startPoll(request)
  }

  async extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    const ids = holds.map((hold) => {
      const mine = this.held.get(hold.owner)
      return mine && mine.token === hold.token ? mine.leaseId : undefined
    })
    const known = ids.filter((id): id is string => id !== undefined)
    const results: ExtendResult[] = holds.map(() => ({ status: 'lost' }))
    if (known.length === 0) return results
    const answer = await this.api.call<{ results: { status: string; ttlMs?: number }[] }>('POST', '/v1/leases/extend', { leases: known, ttl: ttlMs })
    if (!answer.ok) unexpected(answer.error)
    let next = 0
    ids.forEach((id, i) => {
      if (id === undefined) return
      const result = answer.body.results[next++]
      if (result?.status === 'extended' && result.ttlMs !== undefined) {
        results[i] = { status: 'extended', ttlMs: result.ttlMs }
        const mine = this.held.get(holds[i]!.owner)
        if (mine) mine.until = monotonicNow() + result.ttlMs
      } else this.forget(holds[i]!.owner)
    })
    return results
  }

  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const poll = this.polls.get(hold.owner)
    if (poll) await this.cancelPoll(hold.owner, poll)
    const mine = this.held.get(hold.owner)
    if (!mine || ('token' in hold && hold.token !== mine.token && !poll)) return false
    this.forget(hold.owner)
    const answer = await this.api.call<{ released: boolean }>('DELETE', `/v1/leases/${mine.leaseId}`)
    if (!answer.ok) unexpected(answer.error)
    return answer.body.released
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const mine = this.held.get(hold.owner)
    if (!mine || mine.token !== hold.token) return false
    const answer = await this.api.call<GrantBody>('POST', `/v1/leases/${mine.leaseId}/downgrade`)
    if (!answer.ok) {
      if (answer.error.status === 410) return false
      unexpected(answer.error)
    }
    mine.leaseId = answer.body.leaseId
    return true
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
  }

  /** Once the loss stream is open, so a forced release right after the grant still reaches the holder. */
  private async granted(owner: string, body: GrantBody): Promise<AcquireResult> {
    this.remember(owner, body)
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

  private remember(owner: string, body: GrantBody): void {
    const now = monotonicNow()
    if (++this.grantsSincePrune >= 256) {
      this.grantsSincePrune = 0
      for (const [other, held] of this.held) if (held.until + FORGET_AFTER_MS < now) this.forget(other)
    }
    this.held.set(owner, { leaseId: body.leaseId, token: BigInt(body.token), digest: body.owner, until: now + body.ttlMs })
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
   * wake-up), or refused.
   */
  private async startPoll(request: AcquireRequest): Promise<AcquireResult> {
    const waitId = randomBytes(18).toString('base64url')
    const controller = new AbortController()
    let response: Response
    try {
      response = await fetch(this.api.base + lockPath(request.name, '/acquire'), {
        method: 'POST',
        headers: this.api.headers({ 'content-type': 'application/json', accept: 'application/x-ndjson' }),
        body: JSON.stringify({ ...acquireBody(request, POLL_WAIT_MS), waitId }),
        signal: controller.signal,
      })
    } catch (cause) {
      throw backendUnavailable('baton server', cause)
    }
    const lines = readLines(response)
    const first = await lines.next().catch((cause: unknown) => {
      throw backendUnavailable('baton server', cause)
    })
    const answer = first.done ? undefined : (first.value as { state?: string; owner?: string; leaseId?: string; error?: unknown })
    if (!response.ok || !answer || answer.error || !answer.state) {
      // Read to the end rather than abort, so the connection stays in the keep-alive pool.
      await drain(lines)
      if (answer?.leaseId) return this.granted(request.owner, answer as GrantBody)
      return this.notGranted(toApiError(response.ok ? 503 : response.status, JSON.stringify(answer ?? {}), response.headers.get('retry-after')))
    }
    // In line: the rest of the stream is the grant (or the end of the wait).
    // The digest lets inspect() show this waiter under the owner this client knows.
    const digest = answer.owner
    if (digest) ownersByDigest.set(digest, request.owner)
    const done = lines.next().then(
      async (next) => {
        const body = next.done ? undefined : (next.value as { leaseId?: string })
        await drain(lines)
        return body?.leaseId ? (body as GrantBody) : null
      },
      () => null,
    )
    const poll: Poll = { waitId, controller, done, stale: undefined as unknown as NodeJS.Timeout }
    this.polls.set(request.owner, poll)
    this.keepPoll(request.owner, poll, request.queueTtlMs)
    void done.then((grant) => {
      if (!grant && digest && ownersByDigest.get(digest) === request.owner) ownersByDigest.delete(digest)
      if (this.polls.get(request.owner) !== poll) return
      this.polls.delete(request.owner)
      clearTimeout(poll.stale)
      if (!grant) return this.watchers.get(request.owner)?.({ type: 'retry' })
      this.remember(request.owner, grant)
      void this.losses.opened.then(() => {
        const watcher = this.watchers.get(request.owner)
        if (!watcher) return void this.release({ ...request }).catch(() => {})
        watcher({ type: 'granted', token: BigInt(grant.token), ttlMs: grant.ttlMs })
        this.lossOvertook(request.owner, grant.owner)
      })
    })
    return { status: 'busy', retryAfterMs: request.queueTtlMs }
  }

  /** A waiter the core stops refreshing (it went away without leaving) leaves the line after queueTtlMs. */
  private keepPoll(owner: string, poll: Poll, queueTtlMs: number): void {
    clearTimeout(poll.stale)
    poll.stale = setTimeout(() => void this.cancelPoll(owner, poll), queueTtlMs)
    poll.stale.unref()
  }

  /** Leaves the line and waits until the server confirms; a grant that raced with it is kept (release() then frees it). */
  private async cancelPoll(owner: string, poll: Poll): Promise<void> {
    if (this.polls.get(owner) === poll) this.polls.delete(owner)
    clearTimeout(poll.stale)
    await this.api.call('DELETE', `/v1/waits/${poll.waitId}`).catch(() => {})
    poll.controller.abort()
    const grant = await poll.done
    if (grant) this.remember(owner, grant)
  }
}

function acquireBody(request: AcquireRequest, waitMs: number): Record<string, unknown> {
  return {
    ttl: request.ttlMs, wait: waitMs, mode: request.mode, fair: request.fair,
    ...(request.mode === 'permit' ? { permits: request.permits } : {}),
    ...(request.lockDelayMs > 0 ? { lockDelay: request.lockDelayMs } : {}),
  }
}

function lockPath(name: string, suffix: string): string {
  return `/v1/locks/${encodeURIComponent(name)}${suffix}`
}

function lockInfo(body: LockBody): LockInfo {
  const owner = (digest: string) => ownersByDigest.get(digest) ?? digest
  return {
    name: body.name, kind: body.kind, fair: body.fair, permits: body.permits,
    holders: body.holders.map((h) => ({ owner: owner(h.owner), token: BigInt(h.token), mode: h.mode, expiresAt: h.expiresAt })),
    waiters: body.waiters.map((w) => ({ owner: owner(w.owner), mode: w.mode })),
    lastToken: BigInt(body.lastToken),
  }
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

export const createHttpDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const [host] = url.hosts
  if (!host || url.hosts.length > 1) throw invalidArgument(`the store URL ${url.display} must name one baton server: http://[:token@]host:port`)
  const hostPart = host.host.includes(':') ? `[${host.host}]` : host.host
  const base = `${url.scheme}://${hostPart}${host.port ? `:${host.port}` : ''}${url.path ? `/${url.path.replace(/\/$/, '')}` : ''}`
  const api = new Api(base, url.password || url.username || undefined, options.commandTimeoutMs)
  const info = await api.call<{ capabilities: Capabilities }>('GET', '/v1/info', undefined, AbortSignal.timeout(options.connectTimeoutMs))
  if (!info.ok) unexpected(info.error)
  // Hand-overs reach this client as the answer to its waiting request, whatever the server's store does.
  return new HttpDriver(api, { ...info.body.capabilities, handoff: true })
}
