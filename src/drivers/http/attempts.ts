import { randomBytes } from 'node:crypto'
import type { AcquireRequest } from '../../core/driver.js'
import type { Api, ApiResult } from './api.js'
import { acquireBody, lockPath, type GrantBody } from './wire.js'

/** How long the first undo waits before it is tried again; doubled each time, up to MAX. */
const FIRST_RETRY_MS = 250
const MAX_RETRY_MS = 5000

/**
 * One-shot attempts (`POST /v1/locks/{name}/acquire` without a wait), each
 * with a secret request id. The server makes the hold's owner from that id
 * (its idempotent acquires), so an attempt whose answer never came (a cut
 * connection, a deadline) can be undone although its lease id is unknown:
 * the same request, sent again, is answered the lease the first one got, if
 * it got one, and that lease is released. Without it the hold stayed on the
 * server for its whole ttl, nobody's (a hostile review: a tryAcquire whose
 * answer was lost). Tried again with a backoff until the server answers or
 * the client closes; a request that never reached the server is granted by
 * the undo's own send at worst, and released at once.
 */
export class OneShotAttempts {
  /** Attempts whose answer was lost, by owner. */
  private readonly unsettled = new Map<string, { readonly name: string; readonly body: Record<string, unknown> }>()
  private readonly retries = new Set<NodeJS.Timeout>()
  private closed = false

  constructor(private readonly api: Api) {}

  async send(request: AcquireRequest): Promise<ApiResult<GrantBody>> {
    const body = { ...acquireBody(request, 0, undefined), requestId: randomBytes(16).toString('base64url') }
    try {
      return await this.api.call<GrantBody>('POST', lockPath(request.name, '/acquire'), body)
    } catch (error) {
      this.unsettled.set(request.owner, { name: request.name, body })
      throw error
    }
  }

  /**
   * Undoes `owner`'s attempt whose answer was lost, if there was one. The
   * first try's outcome is returned; while the server does not answer it is
   * tried again in the background.
   */
  undo(owner: string): Promise<void> {
    const attempt = (delayMs: number): Promise<void> => {
      const tried = this.undoOnce(owner)
      tried.catch(() => {
        if (this.closed || !this.unsettled.has(owner)) return
        const timer = setTimeout(() => {
          this.retries.delete(timer)
          attempt(Math.min(delayMs * 2, MAX_RETRY_MS)).catch(() => {})
        }, delayMs)
        timer.unref()
        this.retries.add(timer)
      })
      return tried
    }
    return this.unsettled.has(owner) ? attempt(FIRST_RETRY_MS) : Promise.resolve()
  }

  private async undoOnce(owner: string): Promise<void> {
    const attempt = this.unsettled.get(owner)
    if (!attempt) return
    const again = await this.api.call<GrantBody>('POST', lockPath(attempt.name, '/acquire'), attempt.body)
    // 409: the first send is still being served; its outcome is not known yet.
    if (!again.ok && again.error.status === 409) throw new Error('the lost attempt is still in progress on the server')
    if (again.ok) {
      const released = await this.api.call('POST', '/v1/leases/release', { leaseId: again.body.leaseId })
      if (!released.ok && released.error.status !== 410) throw new Error(`the release was refused: ${released.error.message}`)
    }
    // Busy (the name was not ours), 410 (its lease ended already) or released now: nothing is left.
    if (this.unsettled.get(owner) === attempt) this.unsettled.delete(owner)
  }

  /** Each undo still pending gets one last try, then the client stops trying. */
  async close(): Promise<void> {
    this.closed = true
    for (const timer of this.retries) clearTimeout(timer)
    this.retries.clear()
    await Promise.all([...this.unsettled.keys()].map((owner) => this.undoOnce(owner).catch(() => {})))
    this.unsettled.clear()
  }
}
