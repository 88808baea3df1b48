import type {
  AcquireRequest, AcquireResult, Capabilities, Driver, DriverFactory, DriverOptions, ExtendResult, HoldRef,
  ListPage, LockInfo, LockSpec, Wake,
} from '../../core/driver.js'
import { invalidArgument } from '../../core/errors.js'
import { monotonicNow, watchForStalls } from '../../core/clock.js'
import type { StoreUrl } from '../../core/url.js'
import { Api, unexpected } from './api.js'
import { LostAttempts } from './attempts.js'
import { serverApi } from './connection.js'
import { Holds } from './holds.js'
import { Inspector } from './inspect.js'
import { LeaderStreams } from './leader-stream.js'
import { Polls } from './polls.js'
import { Renewals } from './renewals.js'
import { ClientSession } from './session.js'
import { lockPath, notGranted, type GrantBody } from './wire.js'

/**
 * `http://` / `https://`: a baton server as a store. One attempt is one
 * request; waiting is one streamed long-poll that first says "in line", then
 * brings the grant (a hand-over wake-up); renewals go as one batch request;
 * losses (forced release) come over one event stream. Owners here are this
 * client's; the server's owners stay on the server, inside lease ids.
 *
 * Assembled from its parts: the leases held and their losses (holds.ts),
 * the waiting requests (polls.ts), renewals by session or lease by lease
 * (renewals.ts, session.ts), leader streams for observers (leader-stream.ts),
 * inspect and list (inspect.ts), requests and their answers (api.ts, wire.ts).
 */
export class HttpDriver implements Driver {
  readonly store = 'http'
  private readonly holds: Holds
  private readonly session: ClientSession
  private readonly polls: Polls
  private readonly renewals: Renewals
  private readonly leaderStreams: LeaderStreams
  private readonly inspector: Inspector
  private readonly attempts: LostAttempts

  constructor(private readonly api: Api, readonly capabilities: Capabilities, sessions = true) {
    this.holds = new Holds(api)
    this.session = new ClientSession(api, sessions, (digests) => {
      for (const digest of digests) this.holds.lost(digest, 'the baton server reports it lost at its session\'s keepalive (it expired or was taken)')
    })
    this.attempts = new LostAttempts(api)
    this.polls = new Polls(api, this.session, this.holds, (request) => this.release(request), this.attempts)
    this.renewals = new Renewals(api, this.holds, this.session)
    this.leaderStreams = new LeaderStreams(api)
    this.inspector = new Inspector(api)
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    // Before any answer can come: a grant read after a stall is counted from before it.
    watchForStalls()
    const mine = this.holds.get(request.owner)
    // What is left of the lease, not a fresh one: this answers a retry after a stall too.
    // A lease already over (read after a stall) is no hold: ask the server afresh.
    if (mine && mine.until > monotonicNow()) return { status: 'granted', token: mine.token, ttlMs: Math.floor(mine.until - monotonicNow()) }
    if (mine) this.holds.forget(request.owner)
    if (this.polls.refresh(request.owner, request.queueTtlMs)) return { status: 'busy', retryAfterMs: request.queueTtlMs }
    if (!request.enqueue) {
      const answer = await this.attempts.send(request)
      return answer.ok ? this.holds.granted(request.owner, answer.body, request.ttlMs) : notGranted(answer.error)
    }
    return this.polls.start(request)
  }

  extend(holds: readonly HoldRef[], ttlMs: number): Promise<ExtendResult[]> {
    return this.renewals.extend(holds, ttlMs)
  }

  /** Forgets the lease only once the server confirmed: a release that failed can be retried and reach it. */
  async release(hold: LockSpec & { owner: string }): Promise<boolean> {
    const waited = await this.polls.leave(hold.owner)
    const mine = this.holds.get(hold.owner)
    // An owner with no lease known here: a failed one-shot attempt, whose lease (if it got one) is undone by its request id.
    if (!mine && !('token' in hold)) await this.attempts.undo(hold.owner)
    if (!mine || ('token' in hold && hold.token !== mine.token && !waited)) return false
    // The lease id goes in the body, not the path: proxies log paths, and a lease id is a credential.
    const answer = await this.api.call<{ released: boolean }>('POST', '/v1/leases/release', { leaseId: mine.leaseId })
    if (!answer.ok) unexpected(answer.error)
    if (this.holds.get(hold.owner) === mine) this.holds.forget(hold.owner)
    return answer.body.released
  }

  async downgrade(hold: HoldRef): Promise<boolean> {
    const mine = this.holds.get(hold.owner)
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
    const mine = this.holds.get(hold.owner)
    if (!mine || mine.token !== hold.token) return false
    const answer = await this.api.call<{ proclaimed: boolean }>('POST', `/v1/elections/${encodeURIComponent(hold.name)}/proclaim`, { leaseId: mine.leaseId, value })
    if (!answer.ok) {
      if (answer.error.status === 410) return false
      unexpected(answer.error)
    }
    return answer.body.proclaimed
  }

  observe(name: string, onChange: () => void): () => void {
    return this.leaderStreams.observe(name, onChange)
  }

  watch(_name: string, owner: string, onWake: (wake: Wake) => void): () => void {
    return this.holds.watch(owner, onWake)
  }

  inspect(name: string): Promise<LockInfo | null> {
    return this.inspector.inspect(name)
  }

  list(prefix: string, page?: ListPage): AsyncIterable<LockInfo> {
    return this.inspector.list(prefix, page)
  }

  async forceRelease(name: string): Promise<boolean> {
    const answer = await this.api.call<{ released: boolean }>('DELETE', lockPath(name, ''))
    if (!answer.ok) unexpected(answer.error)
    return answer.body.released
  }

  /** Leaves every line; held leases stay on the server until their ttl, like any client that goes away. */
  async close(): Promise<void> {
    await Promise.all([this.polls.close(), this.attempts.close()])
    this.holds.close()
    this.leaderStreams.close()
    this.api.close()
  }
}

export const createHttpDriver: DriverFactory = async (url: StoreUrl, options: DriverOptions) => {
  const api = serverApi(url, options)
  const info = await api.call<{ capabilities: Capabilities }>('GET', '/v1/info', undefined, AbortSignal.timeout(options.connectTimeoutMs))
  if (!info.ok) unexpected(info.error)
  const session = url.params.get('session') ?? 'true'
  if (!['true', 'false'].includes(session)) throw invalidArgument(`${url.display}: "session" must be true or false, got "${session}"`)
  // Hand-overs reach this client as the answer to its waiting request, whatever the server's store does.
  return new HttpDriver(api, { ...info.body.capabilities, handoff: true }, session === 'true')
}
