import type { FastifyReply } from 'fastify'
import type { Baton } from '../index.js'
import type { DetachedGrant } from '../internal-api.js'
import { HttpError } from './http-errors.js'
import type { WaitLimits } from './limits.js'
import type { Session, SessionTable } from './sessions.js'

/** A plain JSON long-poll answered "still waiting" keeps its place this long for the client's next poll. */
export const REPOLL_GRACE_MS = 15_000
/** Default longest plain JSON long-poll, under common load balancers' 60 s idle timeout. */
export const DEFAULT_POLL_MAX_MS = 50_000

export const STILL_WAITING = Symbol('still waiting')

/**
 * The server's books a waiting acquire enters and leaves: the part of the
 * server's context a LongPoll uses, declared here so the context can extend
 * it without the two modules importing each other.
 */
export interface WaitBooks {
  readonly baton: Baton
  readonly limits: WaitLimits
  /** Waiting acquires by the client's waitId, so DELETE /v1/waits/{waitId} can end them. */
  readonly waits: Map<string, LongPoll>
  /** Client sessions: one keepalive renews a client's leases and proves its waiters alive. */
  readonly sessions: SessionTable
  /** Request ids of idempotent acquires in progress. */
  readonly requests: Set<string>
  /** Every waiting acquire, aborted at shutdown. */
  readonly waiting: Set<AbortController>
}

/**
 * One waiting acquire on this server. It may outlive the HTTP request that
 * started it: a plain JSON poll is answered "still waiting" after the
 * server's longest poll, and the client's next poll with the same waitId
 * picks it up again, in the same place in line. It leaves the line when
 * its client disconnects, cancels it (DELETE /v1/waits/{waitId}), does not
 * poll again within REPOLL_GRACE_MS, or (with a session) stops proving it
 * is alive.
 */
export class LongPoll {
  readonly controller = new AbortController()
  done!: Promise<DetachedGrant>
  private reply: FastifyReply | undefined
  private readonly onClose = () => {
    if (this.reply && !this.reply.raw.writableEnded) this.leave(new Error('the client disconnected'))
  }
  private grace: NodeJS.Timeout | undefined
  private grant: DetachedGrant | undefined
  private settled = false
  private unregister: (() => void) | undefined

  constructor(
    private readonly ctx: WaitBooks,
    readonly name: string,
    readonly waitId: string,
    readonly requestId: string | undefined,
  ) {}

  /** Joins the line; `take` is the library's waiting acquire, aborted by this poll's controller. */
  start(take: (signal: AbortSignal) => Promise<DetachedGrant | null>, session: Session | undefined, ttlMs: number): void {
    const { ctx } = this
    if (ctx.waits.has(this.waitId)) throw new HttpError('INVALID_ARGUMENT', 'this waitId is already in use; choose a new random one per request')
    ctx.limits.enter(this.name)
    ctx.waiting.add(this.controller)
    ctx.waits.set(this.waitId, this)
    if (this.requestId !== undefined) ctx.requests.add(this.requestId)
    if (session) {
      this.unregister = ctx.sessions.wait(session, {
        ttlMs, since: Date.now(),
        leave: (why) => this.leave(new HttpError('ABORTED', `the wait left the line: ${why}`, undefined, 409)),
      })
    }
    this.done = take(this.controller.signal).then((grant) => (this.grant = grant!))
    void this.done.then(
      () => this.finish(false),
      () => this.finish(true),
    )
  }

  /** Serves `reply` until granted, or until `pollMaxMs` passes (then STILL_WAITING, keeping the place). */
  async serve(reply: FastifyReply, pollMaxMs: number | undefined): Promise<DetachedGrant | typeof STILL_WAITING> {
    if (this.reply) throw new HttpError('INVALID_ARGUMENT', 'this waitId is already in use; choose a new random one per request')
    clearTimeout(this.grace)
    this.reply = reply
    reply.raw.once('close', this.onClose)
    // A frozen or partitioned client's connection is found dead by TCP even when no byte is due.
    reply.request.raw.socket?.setKeepAlive(true, 10_000)
    let timer: NodeJS.Timeout | undefined
    try {
      const outcome = pollMaxMs === undefined
        ? await this.done
        : await Promise.race([this.done, new Promise<typeof STILL_WAITING>((resolve) => (timer = setTimeout(resolve, pollMaxMs, STILL_WAITING)))])
      if (outcome === STILL_WAITING) {
        this.reply = undefined
        this.grace = setTimeout(() => this.leave(new HttpError('ABORTED', 'the client did not poll again in time', undefined, 409)), REPOLL_GRACE_MS)
        this.grace.unref()
        return STILL_WAITING
      }
      this.ctx.waits.delete(this.waitId)
      if (this.controller.signal.aborted) {
        // Ended (cancel, disconnect, shutdown) while the grant was on its way: nobody will use it.
        await this.ctx.baton.driver.release(outcome.ref).catch(() => {})
        throw this.reason() ?? new HttpError('ABORTED', 'the wait was ended before the answer could be sent', undefined, 409)
      }
      return outcome
    } catch (error) {
      throw this.reason() ?? error
    } finally {
      clearTimeout(timer)
      reply.raw.off('close', this.onClose)
      if (this.reply === reply) this.reply = undefined
    }
  }

  /** Leaves the line (or frees a grant nobody collected); `reason` is what a poll waiting on it is answered. */
  leave(reason: Error): void {
    clearTimeout(this.grace)
    if (!this.controller.signal.aborted) this.controller.abort(reason)
    if (this.settled && this.grant && !this.reply) {
      const grant = this.grant
      this.grant = undefined
      this.ctx.waits.delete(this.waitId)
      void this.ctx.baton.driver.release(grant.ref).catch(() => {})
    }
  }

  /** Why the wait was ended, when it was ended by this server's own rules (an HttpError). */
  private reason(): HttpError | undefined {
    const reason: unknown = this.controller.signal.reason
    return reason instanceof HttpError ? reason : undefined
  }

  private finish(failed: boolean): void {
    this.settled = true
    const { ctx } = this
    ctx.limits.leave(this.name)
    ctx.waiting.delete(this.controller)
    if (this.requestId !== undefined) ctx.requests.delete(this.requestId)
    this.unregister?.()
    if (failed || this.controller.signal.aborted) ctx.waits.delete(this.waitId)
    // Granted while no poll was attached: kept for the next poll until the grace runs out.
    if (!failed && this.controller.signal.aborted && !this.reply) this.leave(this.controller.signal.reason as Error)
  }
}
