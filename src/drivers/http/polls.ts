import { randomBytes } from 'node:crypto'
import type { AcquireRequest, AcquireResult } from '../../core/driver.js'
import { backendUnavailable } from '../../core/errors.js'
import { toApiError, type Api } from './api.js'
import type { Holds } from './holds.js'
import { drain, nextAnswer, readLines } from './ndjson.js'
import { ownersByDigest } from './owners.js'
import type { ClientSession } from './session.js'
import { LostAttempts } from './attempts.js'
import { acquireBody, lockPath, notGranted, type GrantBody } from './wire.js'

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

/** A poll's opened request: the response and its first line. */
interface Opened {
  name: string
  response: Response
  lines: AsyncGenerator<unknown>
  first: unknown
}

/** How long a waiting request may wait on the server; the core cancels it sooner when its own wait ends. */
const POLL_WAIT_MS = 10 * 60_000

/**
 * This client's places in the server's lines, one per waiting owner: a
 * streamed long-poll that first says "in line", then brings the grant,
 * which reaches the owner as a hand-over wake-up (holds.ts).
 */
export class Polls {
  private readonly polls = new Map<string, Poll>()

  constructor(
    private readonly api: Api,
    private readonly session: ClientSession,
    private readonly holds: Holds,
    /** Gives back a grant that came when nobody waited for it any more. */
    private readonly release: (request: AcquireRequest) => Promise<unknown>,
    /** Undoes a waiting request whose stream broke: it may have been granted (see LostAttempts). */
    private readonly lostAttempts: LostAttempts,
  ) {}

  /** The owner's waiting request is still out: the core's refresh keeps it in line. False when it has none. */
  refresh(owner: string, queueTtlMs: number): boolean {
    const poll = this.polls.get(owner)
    if (!poll) return false
    this.keepPoll(owner, poll, queueTtlMs)
    return true
  }

  /** Leaves the owner's line, if it waits in one; whether it did. */
  async leave(owner: string): Promise<boolean> {
    const poll = this.polls.get(owner)
    if (poll) await this.cancelPoll(owner, poll)
    return poll !== undefined
  }

  /** Leaves every line. */
  async close(): Promise<void> {
    await Promise.all([...this.polls].map(([owner, poll]) => this.cancelPoll(owner, poll)))
  }

  /**
   * Sends the waiting request and returns once the server says where it
   * stands: granted at once, or in line (then the grant comes later as a
   * wake-up), or refused. The server's first line must come within the
   * command timeout; after it, heartbeat lines keep a quiet wait alive.
   */
  async start(request: AcquireRequest): Promise<AcquireResult> {
    const waitId = randomBytes(18).toString('base64url')
    const controller = new AbortController()
    const session = await this.session.current()
    const body = { ...acquireBody(request, POLL_WAIT_MS, session), waitId, requestId: LostAttempts.newRequestId() }
    const opened = this.openPoll(request.name, body, controller.signal)
    let late: NodeJS.Timeout | undefined
    const inTime = await Promise.race([opened, new Promise<undefined>((resolve) => (late = setTimeout(() => resolve(undefined), this.api.timeoutMs)))])
      .catch((cause: unknown) => {
        this.lostAttempts.lost(request.name, body)
        throw backendUnavailable('baton server', cause)
      })
      .finally(() => clearTimeout(late))
    if (!inTime) {
      // No first line within the command timeout (a slow or frozen server): the
      // request may be in line, so it stays open as this owner's poll; its answer
      // comes as a wake-up, and the core's deadline bounds the wait.
      const seen: { digest?: string } = {}
      const done = opened.then((first) => this.restOfPoll(request.owner, first, seen, controller.signal, body), () => {
        if (!controller.signal.aborted) this.lostAttempts.lost(request.name, body)
        return null
      })
      this.watchPoll(request, { waitId, controller, done, stale: undefined as unknown as NodeJS.Timeout, ttlMs: request.ttlMs, session }, seen)
      return { status: 'busy', retryAfterMs: request.queueTtlMs }
    }
    const { response, lines, first } = inTime
    const answer = first as { state?: string; owner?: string; leaseId?: string; error?: unknown } | undefined
    if (!response.ok || !answer || answer.error || !answer.state) {
      // Read to the end rather than abort, so the connection stays in the keep-alive pool.
      await drain(lines)
      if (answer?.leaseId) return this.holds.granted(request.owner, answer as GrantBody, request.ttlMs)
      const error = toApiError(response.ok ? 503 : response.status, JSON.stringify(answer ?? {}), response.headers.get('retry-after'))
      // The server no longer has the session (it restarted): the next attempt opens a new one.
      if (session !== undefined && error.status === 404) {
        this.session.reset(session)
        return { status: 'busy', retryAfterMs: 1 }
      }
      return notGranted(error)
    }
    // In line: the rest of the stream is heartbeats, then the grant (or the end of the wait).
    const seen: { digest?: string } = {}
    const done = this.restOfPoll(request.owner, inTime, seen, controller.signal, body)
    this.watchPoll(request, { waitId, controller, done, stale: undefined as unknown as NodeJS.Timeout, ttlMs: request.ttlMs, session }, seen)
    return { status: 'busy', retryAfterMs: request.queueTtlMs }
  }

  /** Sends the waiting request; resolves with its first line (undefined if none). */
  private async openPoll(name: string, body: Record<string, unknown>, signal: AbortSignal): Promise<Opened> {
    const response = await this.api.fetch(lockPath(name, '/acquire'), {
      method: 'POST',
      headers: this.api.headers({ 'content-type': 'application/json', accept: 'application/x-ndjson' }),
      body: JSON.stringify(body),
      signal,
    })
    const lines = readLines(response)
    const next = await lines.next()
    return { name, response, lines, first: next.done ? undefined : next.value }
  }

  /** The grant a poll's stream ends with, or null; `seen.digest`: the owner digest of its "in line" line. */
  private async restOfPoll(
    owner: string, opened: Opened, seen: { digest?: string }, cancelled: AbortSignal, body: Record<string, unknown> & { requestId: string },
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
      const answer = await nextAnswer(lines)
      await drain(lines)
      return answer?.leaseId ? (answer as GrantBody) : null
    } catch {
      // The stream broke, not by our cancel: a grant on it may be lost.
      if (!cancelled.aborted) this.lostAttempts.lost(opened.name, body)
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
      if (!grant) return this.holds.wake(request.owner, { type: 'retry' })
      this.holds.handOver(request.owner, grant, request.ttlMs, () => void this.release({ ...request }).catch(() => {}))
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
    if (grant) this.holds.remember(owner, grant, poll.ttlMs)
  }
}
