import { randomBytes } from 'node:crypto'
import type { AcquireRequest } from '../../core/driver.js'
import type { Api, ApiResult } from './api.js'
import { acquireBody, lockPath, type GrantBody } from './wire.js'

/** How long the first undo waits before it is tried again; doubled each time, up to MAX. */
const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5000

/**
 * Attempts sent with a secret request id. The server makes the hold's owner
 * from that id (its idempotent acquires), so an attempt whose answer never
 * came (a cut connection, a deadline) can be undone although its lease id is
 * unknown: the same request, sent again without a wait, is answered the
 * lease the first one got, if it got one, and that lease is released.
 * Without it the hold stayed on the server for its whole ttl, nobody's (a
 * hostile review: a tryAcquire, and an acquire({ wait }) on a free name,
 * whose answers were lost). Tried again with a backoff until the server
 * answers or the client closes; a request that never reached the server is
 * granted by the undo's own send at worst, and released at once.
 */
export class LostAttempts {
  /** One-shot attempts whose answer was lost, by owner: the core's undo (release) names them. */
  private readonly byOwner = new Map<string, string>()
  /** Every attempt whose answer was lost and not undone yet, by request id. */
  private readonly unsettled = new Map<string, { readonly name: string; readonly body: Record<string, unknown> }>()
  private readonly retries = new Set<NodeJS.Timeout>()
  private closed = false

  constructor(private readonly api: Api) {}

  /** A request id for one attempt: at least 128 random bits, as the server asks. */
  static newRequestId(): string {
    return randomBytes(16).toString('base64url')
  }

  /** One attempt without a wait; when its answer is lost, the core's undo of its owner undoes it. */
  async send(request: AcquireRequest): Promise<ApiResult<GrantBody>> {
    const body = { ...acquireBody(request, 0, undefined), requestId: LostAttempts.newRequestId() }
    try {
      return await this.api.call<GrantBody>('POST', lockPath(request.name, '/acquire'), body)
    } catch (error) {
      this.unsettled.set(body.requestId, { name: request.name, body })
      this.byOwner.set(request.owner, body.requestId)
      throw error
    }
  }

  /** A waiting request's answer was lost (its stream broke): undone now, in the background. */
  lost(name: string, body: Record<string, unknown> & { readonly requestId: string }): void {
    // Asked again without a wait, a place in line or a session (which may be gone by then): the owner is the request id's.
    const { waitId: _waitId, session: _session, ...again } = body
    this.unsettled.set(body.requestId, { name, body: { ...again, wait: 0 } })
    this.undoRequest(body.requestId).catch(() => {})
  }

  /** Undoes `owner`'s one-shot attempt whose answer was lost, if any: the first try's outcome (see undoRequest). */
  undo(owner: string): Promise<void> {
    const requestId = this.byOwner.get(owner)
    this.byOwner.delete(owner)
    return requestId === undefined ? Promise.resolve() : this.undoRequest(requestId)
  }

  /** The first try's outcome is returned; while the server does not answer it is tried again in the background. */
  private undoRequest(requestId: string): Promise<void> {
    const attempt = (delayMs: number): Promise<void> => {
      const tried = this.undoOnce(requestId)
      tried.catch(() => {
        if (this.closed || !this.unsettled.has(requestId)) return
        const timer = setTimeout(() => {
          this.retries.delete(timer)
          attempt(Math.min(delayMs * 2, MAX_RETRY_MS)).catch(() => {})
        }, delayMs)
        timer.unref()
        this.retries.add(timer)
      })
      return tried
    }
    return attempt(FIRST_RETRY_MS)
  }

  private async undoOnce(requestId: string): Promise<void> {
    const attempt = this.unsettled.get(requestId)
    if (!attempt) return
    const again = await this.api.call<GrantBody>('POST', lockPath(attempt.name, '/acquire'), attempt.body)
    // 409: the first send is still being served; its outcome is not known yet.
    if (!again.ok && again.error.status === 409) throw new Error('the lost attempt is still in progress on the server')
    if (again.ok) {
      const released = await this.api.call('POST', '/v1/leases/release', { leaseId: again.body.leaseId })
      if (!released.ok && released.error.status !== 410) throw new Error(`the release was refused: ${released.error.message}`)
    }
    // Busy (the name was not ours), 410 (its lease ended already) or released now: nothing is left.
    this.unsettled.delete(requestId)
  }

  /** Each undo still pending gets one last try, then the client stops trying. */
  async close(): Promise<void> {
    this.closed = true
    for (const timer of this.retries) clearTimeout(timer)
    this.retries.clear()
    await Promise.all([...this.unsettled.keys()].map((requestId) => this.undoOnce(requestId).catch(() => {})))
    this.unsettled.clear()
    this.byOwner.clear()
  }
}
