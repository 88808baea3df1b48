import { monotonicNow } from '../../core/clock.js'
import { warn } from '../../core/events.js'
import { Api, unexpected, type ApiError } from './api.js'

/** Waits before asking again for a session the server refused: doubling from the first to the last. */
const REOPEN_FIRST_MS = 1000
const REOPEN_MAX_MS = 60_000

/** A keepalive's answer, as the driver uses it. */
export interface Renewal {
  /** Monotonic instant the keepalive was sent: the server renewed no earlier than this. */
  readonly sentAt: number
  /** The shortest lease the server's store set, counted from no earlier than `sentAt`. */
  readonly ttlMs: number
}

interface KeepaliveBody {
  ttlMs: number
  lost: string[]
}

/**
 * This client's session on its baton server (docs/server-sessions.md): its
 * leases hang on it, and one keepalive renews them all, so renewal costs
 * one small request per period whatever the client holds. Opened on first
 * use; keepalives are shared: a renewal asks for one sent recently enough
 * (and after its lease was attached), and only sends a new one otherwise.
 *
 * A server that refuses a session (its token's session quota, the server's
 * cap, any other refusal) does not stop the client: it renews lease by lease
 * meanwhile, says so on the `baton:warning` channel, and asks again later.
 */
export class ClientSession {
  /** The open session's id, if any. */
  id: string | undefined
  private opening: Promise<string | undefined> | undefined
  private last: { readonly id: string; readonly sentAt: number; readonly answer: Promise<Renewal | null> } | undefined
  /** Monotonic instant before which no session is asked for, after a refusal. */
  private reopenAt = 0
  private reopenDelayMs = 0

  constructor(
    private readonly api: Api,
    /** false: sessions are off (`?session=false`, or a server without them): leases are renewed one by one, in batches. */
    private enabled: boolean,
    /** Owner digests of leases the server reports gone at a keepalive. */
    private readonly onLost: (digests: readonly string[]) => void,
  ) {}

  /** The session to acquire with, opened on first use; undefined when sessions are off. */
  async current(): Promise<string | undefined> {
    if (!this.enabled) return undefined
    if (this.id !== undefined) return this.id
    if (monotonicNow() < this.reopenAt) return undefined
    return (this.opening ??= this.open().finally(() => (this.opening = undefined)))
  }

  /** Forgets a session the server no longer has; the next acquire opens a new one. */
  reset(id: string): void {
    if (this.id !== id) return
    this.id = undefined
    this.last = undefined
  }

  /**
   * A keepalive of session `id` sent no earlier than `notBefore` and at most
   * `freshMs` ago, sending one if there is none. Null when the server no
   * longer has the session. Rejects with BACKEND_UNAVAILABLE when the server
   * does not answer (the caller retries, as for any renewal).
   */
  keepalive(id: string, notBefore: number, freshMs: number, giveUp: () => string[] = () => []): Promise<Renewal | null> {
    if (this.id !== id) return Promise.resolve(null)
    const now = monotonicNow()
    const last = this.last
    if (last && last.id === id && last.sentAt >= notBefore && now - last.sentAt <= freshMs) return last.answer
    const given = giveUp()
    const body = { sessionId: id, ...(given.length > 0 ? { giveUp: given } : {}) }
    const answer = this.api.call<KeepaliveBody>('POST', '/v1/sessions/keepalive', body).then((reply) => {
      if (reply.ok) {
        if (reply.body.lost.length > 0) this.onLost(reply.body.lost)
        return { sentAt: now, ttlMs: reply.body.ttlMs }
      }
      if (reply.error.status === 404) {
        this.reset(id)
        return null
      }
      return unexpected(reply.error)
    })
    const sent = { id, sentAt: now, answer }
    this.last = sent
    answer.catch(() => {
      if (this.last === sent) this.last = undefined
    })
    return answer
  }

  /** Renews lease by lease until a later attempt (backing off, at least the server's Retry-After). */
  private refused(error: ApiError): void {
    this.reopenDelayMs = Math.min(REOPEN_MAX_MS, Math.max(REOPEN_FIRST_MS, this.reopenDelayMs * 2))
    const delayMs = Math.max(this.reopenDelayMs, error.retryAfterMs ?? 0)
    this.reopenAt = monotonicNow() + delayMs
    warn('http', 'SESSION_REFUSED', `the baton server refused a session (${error.status} ${error.code}: ${error.message}); leases are renewed one by one meanwhile, a session is asked for again in ${Math.ceil(delayMs / 1000)} s`)
  }

  private async open(): Promise<string | undefined> {
    const reply = await this.api.call<{ sessionId: string }>('POST', '/v1/sessions', {})
    if (!reply.ok) {
      // A server without sessions: renew lease by lease.
      if (reply.error.status === 404) {
        this.enabled = false
        return undefined
      }
      this.refused(reply.error)
      return undefined
    }
    this.reopenAt = 0
    this.reopenDelayMs = 0
    this.id = reply.body.sessionId
    this.last = undefined
    return this.id
  }
}
