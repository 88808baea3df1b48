import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { HoldRef, LockSpec } from '../core/driver.js'
import { monotonicNow } from '../core/clock.js'
import type { DetachedGrant } from '../core/keeper.js'
import type { LockView } from '../baton.js'
import { parseDuration } from '../core/duration.js'
import { isBatonError } from '../core/errors.js'
import { validateName, validatePrefix } from '../core/names.js'
import { parseWait } from '../core/options.js'
import { demand } from './auth.js'
import { accessOf, refuseGrantsIfNotReady, shuttingDown, type ServerContext } from './context.js'
import { kindOf } from './events.js'
import { HttpError, toHttpError } from './http-errors.js'
import { decodeLeaseId, encodeLeaseId, idempotentOwner, ownerDigest, type LeaseRef } from './lease-id.js'
import { schemas } from './schemas.js'

type Duration = number | string
interface AcquireBody {
  ttl?: Duration
  wait?: Duration
  mode?: 'exclusive' | 'read' | 'write' | 'permit'
  permits?: number
  fair?: boolean
  lockDelay?: Duration
  waitId?: string
  requestId?: string
}
type NameParams = { Params: { name: string } }
type LeaseParams = { Params: { leaseId: string } }

/** The lock and lease routes of DESIGN.md; each is a thin call into the library. */
export function lockRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { baton } = ctx
  const keeper = baton.keeper

  app.post<NameParams & { Body: AcquireBody }>('/v1/locks/:name/acquire', { schema: schemas.acquire }, async (request, reply) => {
    const name = validateName(request.params.name)
    demand(accessOf(request), 'lock', name)
    refuseGrantsIfNotReady(ctx)
    const body = request.body
    const spec = specOf(name, body)
    const ttlMs = body.ttl === undefined ? DEFAULT_TTL_MS : baton.ttl(body.ttl)
    const waitMs = body.wait === undefined ? 0 : parseWait(body.wait, 0)
    // The http:// driver asks for NDJSON: a first line once it is in line, then the answer.
    const stream = waitMs > 0 && request.headers.accept === NDJSON ? new AnswerStream(reply) : undefined
    const started = performance.now()
    let outcome = 'granted'
    const requestId = body.requestId
    let owner: string | undefined
    if (requestId !== undefined) {
      // One attempt per request id at a time: two in flight as one owner could undo each other's hold.
      if (ctx.requests.has(requestId)) throw new HttpError('INVALID_ARGUMENT', 'an acquire with this requestId is still in progress on this server', undefined, 409)
      owner = idempotentOwner(keeper.clientId, requestId, name)
      ctx.requests.add(requestId)
    }
    try {
      const grant = waitMs === 0
        ? await keeper.takeDetached(spec, { ttlMs, waitMs: 0, signal: undefined, nullIfBusy: true, ...(owner ? { owner } : {}) })
        : await waitFor(ctx, reply, spec, ttlMs, waitMs, body.waitId, owner, stream && ((owner) => stream.line({ state: 'waiting', owner: ownerDigest(owner) })))
      if (!grant) throw new HttpError('LOCK_TIMEOUT', `"${name}" is held; send "wait" to wait for it`)
      if (grant.lost) throw new HttpError('LEASE_LOST', `"${name}" was granted and lost at once (released by force); try again`)
      if (reply.raw.destroyed) {
        // Granted after the client left: nobody will use it, so nobody holds it.
        await baton.driver.release(grant.ref)
        return reply
      }
      const leftMs = Math.max(0, Math.floor(grant.startedAt + grant.ttlMs - monotonicNow()))
      ctx.desk.granted(grant.ref, leftMs, grant.waitedMs)
      ctx.dataDir?.noteLease(spec.lockDelayMs + leftMs)
      const answer = grantBody(grant.ref, ttlMs, leftMs)
      return stream ? stream.end(answer) : answer
    } catch (error) {
      outcome = isBatonError(error) || error instanceof HttpError ? (error as { code: string }).code.toLowerCase() : 'error'
      const answer = isBatonError(error, 'ABORTED') && ctx.shuttingDown ? shuttingDown() : error
      if (stream) return stream.fail(answer)
      throw answer
    } finally {
      if (requestId !== undefined) ctx.requests.delete(requestId)
      ctx.metrics.acquired(kindOf(spec.mode), outcome, (performance.now() - started) / 1000)
    }
  })

  app.delete<{ Params: { waitId: string } }>('/v1/waits/:waitId', { schema: schemas.cancelWait }, async (request, reply) => {
    const wait = ctx.waits.get(request.params.waitId)
    if (!wait) throw new HttpError('NOT_FOUND', 'no acquire with this waitId waits on this server')
    wait.controller.abort(new Error('the client left the line (DELETE /v1/waits)'))
    await wait.done.catch(() => {})
    return reply.code(204).send()
  })

  app.post<LeaseParams & { Body: { ttl?: Duration } }>('/v1/leases/:leaseId/extend', { schema: schemas.extend }, async (request) => {
    const ref = leaseOf(request, 'lock')
    refuseIfClosing(ctx)
    const ttlMs = request.body?.ttl === undefined ? ref.ttlMs : baton.ttl(request.body.ttl)
    const [result] = await ctx.desk.extend([ref], ttlMs)
    if (result!.status === 'lost') throw leaseGone(ref.name)
    ctx.dataDir?.noteLease(ref.lockDelayMs + result!.ttlMs)
    return grantBody(ref, ref.ttlMs, result!.ttlMs)
  })

  app.post<{ Body: { leases: string[]; ttl?: Duration } }>('/v1/leases/extend', { schema: schemas.extendMany }, async (request) => {
    refuseIfClosing(ctx)
    const access = accessOf(request)
    const ttl = request.body.ttl === undefined ? undefined : baton.ttl(request.body.ttl)
    const results: { leaseId: string; status: 'extended' | 'lost' | 'forbidden'; expiresAt?: number; ttlMs?: number }[] =
      request.body.leases.map((leaseId) => ({ leaseId, status: 'lost' }))
    // One store batch per ttl: the watchdog sends one ttl for all, so usually one batch.
    const byTtl = new Map<number, { index: number; ref: LeaseRef }[]>()
    request.body.leases.forEach((leaseId, index) => {
      const ref = decodeLeaseId(leaseId)
      if (!ref) return
      if (!access.allows('lock', ref.name)) return void (results[index]!.status = 'forbidden')
      const ttlMs = ttl ?? ref.ttlMs
      const group = byTtl.get(ttlMs) ?? []
      group.push({ index, ref })
      byTtl.set(ttlMs, group)
    })
    for (const [ttlMs, group] of byTtl) {
      const extended = await ctx.desk.extend(group.map((g) => g.ref), ttlMs)
      let longest = 0
      group.forEach(({ index, ref }, i) => {
        const result = extended[i]!
        if (result.status !== 'extended') return
        longest = Math.max(longest, ref.lockDelayMs + result.ttlMs)
        Object.assign(results[index]!, { status: 'extended', expiresAt: Date.now() + result.ttlMs, ttlMs: result.ttlMs })
      })
      if (longest > 0) ctx.dataDir?.noteLease(longest)
    }
    return { results }
  })

  app.post<LeaseParams>('/v1/leases/:leaseId/downgrade', { schema: schemas.downgrade }, async (request) => {
    const ref = leaseOf(request, 'lock')
    if (ref.mode !== 'write') throw new HttpError('INVALID_ARGUMENT', 'only a write lease can be downgraded to read')
    if (!(await ctx.desk.downgrade(ref))) throw leaseGone(ref.name)
    const read = { ...ref, mode: 'read' as const }
    return grantBody(read, ref.ttlMs, ref.ttlMs)
  })

  app.delete<LeaseParams>('/v1/leases/:leaseId', { schema: schemas.release }, async (request) => {
    const ref = leaseOf(request, 'lock')
    return { released: await ctx.desk.release(ref) }
  })

  app.get<NameParams>('/v1/locks/:name', { schema: schemas.inspect }, async (request) => {
    const name = validateName(request.params.name)
    demand(accessOf(request), 'read', name)
    const view = await baton.inspect(name)
    if (!view) throw new HttpError('NOT_FOUND', `"${name}" is not in use (nobody holds or waits for it)`)
    return publicView(view)
  })

  app.get<{ Querystring: { prefix?: string; limit?: string; cursor?: string } }>('/v1/locks', { schema: schemas.list }, async (request) => {
    const access = accessOf(request)
    const prefix = validatePrefix(request.query.prefix ?? '')
    if (!access.coversPrefix(prefix)) throw new HttpError('FORBIDDEN', `this token may not read names under "${prefix}"`)
    const limit = Number(request.query.limit ?? 100)
    if (!(limit >= 1 && limit <= 1000)) throw new HttpError('INVALID_ARGUMENT', `"limit" must be from 1 to 1000, got ${request.query.limit}`)
    const after = request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor)
    // One more than the page, to know whether another page follows; the store reads only this page.
    const fetched = await baton.list({ prefix, ...(after ? { after } : {}), limit: limit + 1 })
    const page = fetched.slice(0, limit)
    return {
      // A token limited to some prefixes sees only its names; the cursor still moves past the others.
      locks: page.filter((v) => access.allows('read', v.name)).map(publicView),
      ...(fetched.length > limit ? { nextCursor: Buffer.from(page[page.length - 1]!.name).toString('base64url') } : {}),
    }
  })

  app.delete<NameParams>('/v1/locks/:name', { schema: schemas.forceRelease }, async (request) => {
    const name = validateName(request.params.name)
    demand(accessOf(request), 'admin', name)
    return { released: await ctx.desk.forceRelease(name) }
  })
}

const DEFAULT_TTL_MS = 30_000

/**
 * The lock spec of one acquire request (mutex, one side of a rwlock, a
 * semaphore permit), built directly rather than through the library's lock
 * objects: every request is its own client (no reentrancy between requests),
 * so a per-request mutex handle would be made and dropped for nothing.
 */
function specOf(name: string, body: AcquireBody): LockSpec {
  const mode = body.mode ?? 'exclusive'
  if (body.permits !== undefined && mode !== 'permit') throw new HttpError('INVALID_ARGUMENT', '"permits" is only for mode "permit"')
  if (mode === 'permit' && body.permits === undefined) throw new HttpError('INVALID_ARGUMENT', 'mode "permit" needs "permits", the semaphore\'s size')
  const lockDelayMs = body.lockDelay === undefined ? 0 : parseDuration(body.lockDelay, 'lockDelay', { allowZero: true })
  return { name, kind: kindOf(mode), mode, fair: body.fair ?? false, permits: body.permits ?? 1, lockDelayMs }
}

/**
 * A long-poll: the library waits (store wake-ups, no polling here) until the
 * lock is granted, `wait` runs out, the client disconnects or cancels by its
 * waitId, or the server shuts down; the last three abort the wait at once,
 * which leaves the line.
 */
async function waitFor(
  ctx: ServerContext, reply: FastifyReply, spec: LockSpec, ttlMs: number, waitMs: number,
  waitId: string | undefined, owner: string | undefined, onWaiting: ((owner: string) => void) | undefined,
): Promise<DetachedGrant> {
  if (waitId !== undefined && ctx.waits.has(waitId)) throw new HttpError('INVALID_ARGUMENT', 'this waitId is already in use; choose a new random one per request')
  ctx.limits.enter(spec.name)
  const controller = new AbortController()
  const onClose = () => {
    if (!reply.raw.writableEnded) controller.abort(new Error('the client disconnected'))
  }
  reply.raw.once('close', onClose)
  ctx.waiting.add(controller)
  const done = ctx.baton.keeper.takeDetached(spec, {
    ttlMs, waitMs, signal: controller.signal, nullIfBusy: false, ...(onWaiting ? { onWaiting } : {}), ...(owner ? { owner } : {}),
  })
  if (waitId !== undefined) ctx.waits.set(waitId, { controller, done })
  try {
    const grant = (await done)!
    if (controller.signal.aborted) {
      await ctx.baton.driver.release(grant.ref)
      throw new HttpError('ABORTED', 'the wait was ended before the answer could be sent', undefined, 409)
    }
    return grant
  } finally {
    ctx.limits.leave(spec.name)
    ctx.waiting.delete(controller)
    if (waitId !== undefined) ctx.waits.delete(waitId)
    reply.raw.off('close', onClose)
  }
}

const NDJSON = 'application/x-ndjson'

/**
 * The streamed form of a waiting acquire: `{"state":"waiting"}` as soon as
 * the request is in the store's line, then one line with the grant or the
 * error. A client learns that its place is taken without a second request.
 */
class AnswerStream {
  private started = false
  constructor(private readonly reply: FastifyReply) {
    reply.hijack()
  }

  line(value: unknown, status = 200): void {
    const res = this.reply.raw
    if (res.destroyed) return
    if (!this.started) {
      this.started = true
      res.writeHead(status, { 'content-type': `${NDJSON}; charset=utf-8`, 'cache-control': 'no-store' })
    }
    res.write(`${JSON.stringify(value)}\n`)
  }

  end(value: unknown): FastifyReply {
    this.line(value)
    this.reply.raw.end()
    return this.reply
  }

  fail(error: unknown): FastifyReply {
    const http = toHttpError(error)
    this.line({ error: { code: http.code, message: http.message } }, http.status)
    this.reply.raw.end()
    return this.reply
  }
}

/** `askedTtlMs`: the ttl asked for, the default of later extends; `leftMs`: what the store granted. */
function grantBody(ref: HoldRef, askedTtlMs: number, leftMs: number) {
  return {
    leaseId: encodeLeaseId(ref, askedTtlMs), name: ref.name, token: ref.token.toString(), expiresAt: Date.now() + leftMs, ttlMs: leftMs,
    owner: ownerDigest(ref.owner), mode: ref.mode,
  }
}

function leaseOf(request: FastifyRequest<LeaseParams>, right: 'lock'): LeaseRef {
  const ref = decodeLeaseId(request.params.leaseId)
  if (!ref) throw new HttpError('NOT_FOUND', 'this is not a lease id of a baton server')
  demand(accessOf(request), right, ref.name)
  return ref
}

const leaseGone = (name: string) =>
  new HttpError('LEASE_LOST', `the lease on "${name}" is gone (it expired, was released or was taken by force)`)

function refuseIfClosing(ctx: ServerContext): void {
  if (ctx.shuttingDown) throw shuttingDown()
}

function decodeCursor(cursor: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(cursor)) throw new HttpError('INVALID_ARGUMENT', '"cursor" must be the nextCursor of a previous page')
  return Buffer.from(cursor, 'base64url').toString('utf8')
}

/** A lock as the API shows it: owner digests, tokens as decimal strings. */
export function publicView(view: LockView) {
  return {
    name: view.name, kind: view.kind, fair: view.fair, permits: view.permits,
    holders: view.holders.map((h) => ({ owner: ownerDigest(h.owner), token: h.token.toString(), mode: h.mode, expiresAt: h.expiresAt })),
    waiters: view.waiters.map((w) => ({ owner: ownerDigest(w.owner), mode: w.mode })),
    lastToken: view.lastToken.toString(),
  }
}

export type { HoldRef }
