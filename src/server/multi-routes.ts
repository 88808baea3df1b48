import type { FastifyInstance } from 'fastify'
import { isBatonError } from '../index.js'
import { compareNames, type DetachedGrant, type DetachedOptions, type LockSpec, monotonicNow, parseDuration, parseWait } from '../internal-api.js'
import { demand } from './auth.js'
import { accessOf, refuseGrantsIfNotReady, shuttingDown, tenantOf, type ServerContext } from './context.js'
import { kindOf } from './events.js'
import { HttpError } from './http-errors.js'
import { requestName } from './lease-secret.js'
import { clipped } from './acquire-request.js'
import { AnswerStream, NDJSON } from './answer-stream.js'
import { grantBody } from './lease-answers.js'
import { multiSchemas } from './schemas.js'

interface MultiBody {
  locks: { name: string; mode?: 'exclusive' | 'read' | 'write' }[]
  ttl?: number | string
  wait?: number | string
  fair?: boolean
  lockDelay?: number | string
  description?: string
}

/**
 * Several locks in one request, all or none (docs/multi-lock.md): the
 * server's form of `baton.multi()`. Like the single acquire, every part is a
 * detached grant answered as a lease id, so the client extends and releases
 * the parts as any lease (or all at once with POST /v1/multi/release). While
 * later parts are awaited, the server renews the parts already taken; a set
 * it can not complete is released before the answer.
 */
export function multiRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: MultiBody }>('/v1/multi/acquire', { schema: multiSchemas.acquireMulti }, async (request, reply) => {
    const body = request.body
    const access = accessOf(request)
    const lockDelayMs = body.lockDelay === undefined ? 0 : parseDuration(body.lockDelay, 'lockDelay', { allowZero: true })
    const specs: LockSpec[] = body.locks.map((part) => {
      const name = requestName(part.name)
      demand(access, 'lock', name)
      const mode = part.mode ?? 'exclusive'
      return { name, kind: kindOf(mode), mode, fair: body.fair ?? false, permits: 1, lockDelayMs }
    }).sort((a, b) => compareNames(a.name, b.name))
    for (let i = 1; i < specs.length; i++) {
      if (specs[i]!.name === specs[i - 1]!.name) throw new HttpError('INVALID_ARGUMENT', `"${specs[i]!.name}" is listed twice`)
    }
    // The acquire hook checked room for one hold; a set takes one per name.
    ctx.quotas.check(tenantOf(request), 'holds', specs.length)
    refuseGrantsIfNotReady(ctx)
    const ttlMs = body.ttl === undefined ? ctx.defaultTtlMs : ctx.baton.ttl(body.ttl)
    const waitMs = body.wait === undefined ? 0 : parseWait(body.wait, 0)
    const stream = waitMs > 0 && request.headers.accept === NDJSON ? new AnswerStream(reply, Math.max(10, Math.floor(ctx.pollMaxMs / 3))) : undefined
    // A plain JSON answer can not say "still waiting" for a set (it holds parts meanwhile): it waits at most one poll.
    const capped = !stream && waitMs > ctx.pollMaxMs
    const set = new SetInProgress(ctx, ttlMs, body.description === undefined ? {} : { description: clipped(body.description) })
    const onClose = () => {
      if (!reply.raw.writableEnded) set.controller.abort(new HttpError('ABORTED', 'the client disconnected', undefined, 409))
    }
    reply.raw.once('close', onClose)
    ctx.waiting.add(set.controller)
    const entered: string[] = []
    const started = performance.now()
    let outcome = 'granted'
    try {
      if (waitMs > 0) {
        for (const spec of specs) {
          ctx.limits.enter(spec.name)
          entered.push(spec.name)
        }
      }
      const onWaiting = stream && ((owner: string) => stream.waiting({ state: 'waiting', name: set.nameOf(owner) }))
      const taken = await set.take(specs, capped ? ctx.pollMaxMs : waitMs, onWaiting || undefined)
      if (reply.raw.destroyed) {
        // Granted after the client left: nobody will use it, so nobody holds it.
        await set.releaseAll()
        return reply
      }
      try {
        ctx.quotas.admit(tenantOf(request), taken.map(({ grant }) => grant.ref.owner))
      } catch (error) {
        // Parallel requests all passed the quota check before their grants: the ones past it give theirs back.
        await set.releaseAll()
        throw error
      }
      const wallNow = Date.now() // read before the monotonic clock: see grantBody
      const now = monotonicNow()
      const answer = {
        leases: taken.map(({ grant, until }) => {
          const leftMs = Math.max(0, Math.floor(until - now))
          ctx.desk.granted(grant.ref, leftMs, grant.waitedMs)
          ctx.dataDir?.noteLease(grant.ref.lockDelayMs + leftMs)
          return grantBody(ctx.leaseIds, grant.ref, ttlMs, leftMs, wallNow)
        }),
      }
      return stream ? stream.end(answer) : answer
    } catch (error) {
      outcome = isBatonError(error) || error instanceof HttpError ? (error as { code: string }).code.toLowerCase() : 'error'
      let answer = isBatonError(error, 'ABORTED') && ctx.shuttingDown ? shuttingDown() : error
      if (capped && isBatonError(answer, 'LOCK_TIMEOUT')) {
        answer = new HttpError('LOCK_TIMEOUT', `${answer.message}; a plain JSON request waits at most ${ctx.pollMaxMs} ms ` +
          '(the server\'s longest poll) and holds nothing after it: ask again, or send Accept: application/x-ndjson to wait the whole "wait"')
      }
      if (stream) return stream.fail(answer)
      throw answer
    } finally {
      set.stop()
      ctx.waiting.delete(set.controller)
      reply.raw.off('close', onClose)
      for (const name of entered) ctx.limits.leave(name)
      const seconds = (performance.now() - started) / 1000
      for (const spec of specs) ctx.metrics.acquired(kindOf(spec.mode), outcome, seconds)
    }
  })

  app.post<{ Body: { leases: string[] } }>('/v1/multi/release', { schema: multiSchemas.releaseMulti }, async (request) => {
    const access = accessOf(request)
    const refs = request.body.leases.map((id) => {
      const ref = ctx.leaseIds.decode(id)
      if (!ref) throw new HttpError('NOT_FOUND', 'this is not a lease id of a server of this store (unknown, edited, or from another store)')
      demand(access, 'lock', ref.name)
      return ref
    })
    return {
      released: await Promise.all(refs.map((ref) => {
        ctx.sessions.detach(ref)
        return ctx.desk.release(ref)
      })),
    }
  })
}

interface Taken {
  readonly grant: DetachedGrant
  /** Monotonic instant the store's lease surely ends (last grant or renewal). */
  until: number
}

/** One multi acquire: the parts taken so far, renewed while the rest is awaited, released unless all are had. */
class SetInProgress {
  readonly controller = new AbortController()
  private readonly taken: Taken[] = []
  private readonly waitingOwners = new Map<string, string>()
  private lost: HttpError | undefined
  private renewal: NodeJS.Timeout | undefined
  private stopped = false

  constructor(
    private readonly ctx: ServerContext,
    private readonly ttlMs: number,
    private readonly extras: Pick<DetachedOptions, 'description'>,
  ) {}

  nameOf(owner: string): string | undefined {
    return this.waitingOwners.get(owner)
  }

  async take(specs: readonly LockSpec[], waitMs: number, onWaiting: ((owner: string) => void) | undefined): Promise<Taken[]> {
    const keeper = this.ctx.baton.keeper
    const deadline = monotonicNow() + waitMs
    try {
      for (const spec of specs) {
        const grant = waitMs === 0
          ? await keeper.takeDetached(spec, { ttlMs: this.ttlMs, waitMs: 0, signal: undefined, nullIfBusy: true, ...this.extras })
          : await keeper.takeDetached(spec, {
            ttlMs: this.ttlMs, waitMs: Math.max(0, Math.floor(deadline - monotonicNow())), signal: this.controller.signal, nullIfBusy: false,
            ...(onWaiting ? { onWaiting: (owner: string) => { this.waitingOwners.set(owner, spec.name); onWaiting(owner) } } : {}),
            ...this.extras,
          })
        if (!grant) throw new HttpError('LOCK_TIMEOUT', `"${spec.name}" is held; send "wait" to wait for the set`)
        this.taken.push({ grant, until: grant.startedAt + grant.ttlMs })
        if (grant.lost || this.ctx.desk.forcedSince(spec.name, grant.startedAt)) {
          throw new HttpError('LEASE_LOST', `"${spec.name}" was granted and lost at once (released by force); nothing is held, try again`)
        }
        this.renewSoon()
      }
      const expired = this.taken.find((part) => part.until <= monotonicNow())
      if (expired) this.lose(expired.grant.ref.name, 'its lease ran out without a confirmed renewal')
      // A part forced away while later ones were awaited (before its next renewal could tell): another may hold it now.
      const forced = this.taken.find((part) => this.ctx.desk.forcedSince(part.grant.ref.name, part.grant.startedAt))
      if (forced) this.lose(forced.grant.ref.name, 'released by force')
      if (this.lost) throw this.lost
      return this.taken
    } catch (error) {
      const reason = this.lost ?? error
      await this.releaseAll()
      throw reason
    }
  }

  async releaseAll(): Promise<void> {
    const driver = this.ctx.baton.driver
    for (const part of this.taken.splice(0).reverse()) await driver.release(part.grant.ref).catch(() => {})
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.renewal)
    this.renewal = undefined
  }

  /** The parts taken are renewed every ttl/3 while later ones are awaited, as the library's watchdog would. */
  private renewSoon(): void {
    if (this.renewal || this.stopped) return
    this.renewal = setTimeout(() => void this.renew(), Math.max(1, Math.floor(this.ttlMs / 3)))
    this.renewal.unref()
  }

  private async renew(): Promise<void> {
    const parts = [...this.taken]
    const sentAt = monotonicNow()
    try {
      const results = await this.ctx.baton.driver.extend(parts.map((part) => part.grant.ref), this.ttlMs)
      results.forEach((result, i) => {
        if (result.status === 'extended') parts[i]!.until = sentAt + result.ttlMs
        else this.lose(parts[i]!.grant.ref.name, 'the store no longer has it (released by force, or expired)')
      })
    } catch {
      // The store did not answer: the next renewal tries again; a part whose lease ran out meanwhile ends the set.
      const expired = parts.find((part) => part.until <= monotonicNow())
      if (expired) this.lose(expired.grant.ref.name, 'its lease ran out while the store did not answer')
    }
    this.renewal = undefined
    if (!this.controller.signal.aborted && this.taken.length > 0) this.renewSoon()
  }

  private lose(name: string, why: string): void {
    this.lost ??= new HttpError('LEASE_LOST', `"${name}" was lost while the rest of the set was awaited (${why}); nothing is held, try again`)
    if (!this.controller.signal.aborted) this.controller.abort(this.lost)
  }
}
