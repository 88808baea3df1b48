import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MAX_DESCRIPTION_BYTES, type ExtendResult, type HoldRef, type LockSpec } from '../core/driver.js'
import { monotonicNow } from '../core/clock.js'
import type { DetachedGrant } from '../core/keeper.js'
import type { LockView } from '../baton.js'
import { parseDuration } from '../core/duration.js'
import { isBatonError } from '../core/errors.js'
import { validatePrefix } from '../core/names.js'
import { isReserved, requestName } from './lease-secret.js'
import { parseWait, parseWeight } from '../core/options.js'
import { compareNames } from '../core/list.js'
import { demand } from './auth.js'
import { accessOf, refuseGrantsIfNotReady, tenantOf, shuttingDown, type ServerContext } from './context.js'
import { kindOf } from './events.js'
import { HttpError, toHttpError } from './http-errors.js'
import { idempotentOwner, ownerDigest, type LeaseIds, type LeaseRef } from './lease-id.js'
import { schemas, sessionSchemas } from './schemas.js'
import { LongPoll, STILL_WAITING } from './waits.js'
import { checkedValue, electionRoutes } from './election-routes.js'

type Duration = number | string
interface AcquireBody {
  ttl?: Duration
  wait?: Duration
  mode?: 'exclusive' | 'read' | 'write' | 'permit'
  permits?: number
  weight?: number
  fair?: boolean
  lockDelay?: Duration
  waitId?: string
  requestId?: string
  session?: string
  description?: string
  /** Leader election: the candidate's announced value, kept beside the hold (src/server/election-routes.ts). */
  value?: string
}
type NameParams = { Params: { name: string } }
type LeaseParams = { Params: { leaseId: string } }

/** The lock and lease routes of docs/http-api.md; each is a thin call into the library. */
export function lockRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { baton } = ctx
  const keeper = baton.keeper

  const acquire = async (request: FastifyRequest<NameParams & { Body: AcquireBody }>, reply: FastifyReply) => {
    const name = requestName(request.params.name)
    demand(accessOf(request), 'lock', name)
    refuseGrantsIfNotReady(ctx)
    const body = request.body
    const spec = specOf(name, body)
    const ttlMs = body.ttl === undefined ? ctx.defaultTtlMs : baton.ttl(body.ttl)
    const waitMs = body.wait === undefined ? 0 : parseWait(body.wait, 0)
    const session = body.session === undefined ? undefined : ctx.sessions.demand(body.session, accessOf(request))
    const resumed = waitMs > 0 && body.waitId !== undefined ? ctx.waits.get(body.waitId) : undefined
    if (resumed && (resumed.name !== name || resumed.requestId !== body.requestId)) {
      throw new HttpError('INVALID_ARGUMENT', 'this waitId is already in use; choose a new random one per request')
    }
    const requestId = body.requestId
    let owner: string | undefined
    let earlier: bigint | undefined
    if (requestId !== undefined) {
      // One attempt per request id at a time: two in flight as one owner could undo each other's hold.
      // Checked before a streamed answer starts, so it is answered as a plain 409.
      if (!resumed && ctx.requests.has(requestId)) throw new HttpError('INVALID_ARGUMENT', 'an acquire with this requestId is still in progress on this server', undefined, 409)
      owner = idempotentOwner(keeper.clientId, requestId, name, spec.weight)
      earlier = ctx.outcomes.tokenOf(owner)
      if (earlier !== undefined && !ctx.desk.tracks(owner)) throw requestSpent(name)
    }
    // The http:// driver asks for NDJSON: a first line once it is in line, heartbeats, then the answer.
    const stream = waitMs > 0 && request.headers.accept === NDJSON ? new AnswerStream(reply, Math.max(10, Math.floor(ctx.pollMaxMs / 3))) : undefined
    const started = performance.now()
    let outcome = 'granted'
    let poll: LongPoll | undefined
    try {
      let grant: DetachedGrant | null
      if (waitMs === 0) {
        grant = await keeper.takeDetached(spec, { ttlMs, waitMs: 0, signal: undefined, nullIfBusy: true, ...detachedExtras(owner, body.description, body.value) })
      } else {
        poll = resumed ?? new LongPoll(ctx, name, body.waitId ?? randomBytes(18).toString('base64url'), requestId)
        if (resumed) stream?.line({ state: 'waiting' })
        else {
          const onWaiting = stream && ((owner: string) => stream.waiting({ state: 'waiting', owner: ownerDigest(owner) }))
          poll.start((signal) => keeper.takeDetached(spec, {
            ttlMs, waitMs, signal, nullIfBusy: false, ...(onWaiting ? { onWaiting } : {}), ...detachedExtras(owner, body.description, body.value),
          }), session, ttlMs)
        }
        const got = await poll.serve(reply, stream ? undefined : ctx.pollMaxMs)
        if (got === STILL_WAITING) {
          outcome = 'still_waiting'
          return reply.code(202).send({ state: 'waiting', waitId: poll.waitId })
        }
        grant = got
      }
      if (!grant) throw new HttpError('LOCK_TIMEOUT', `"${name}" is held; send "wait" to wait for it`)
      if (!grant.lost && ctx.desk.forcedSince(name, grant.startedAt)) {
        // Forced while on its way here (before this server tracked it, so no "lost" event reached the client): not held.
        await baton.driver.release(grant.ref).catch(() => {})
        throw new HttpError('LEASE_LOST', `"${name}" was granted and lost at once (released by force); try again`)
      }
      if (grant.lost) throw new HttpError('LEASE_LOST', `"${name}" was granted and lost at once (released by force); try again`)
      if (reply.raw.destroyed) {
        // Granted after the client left: nobody will use it, so nobody holds it.
        await baton.driver.release(grant.ref)
        return reply
      }
      if (earlier !== undefined && grant.ref.token !== earlier) {
        // The request's first lease ended and this duplicate got a new one, which nobody would release.
        await baton.driver.release(grant.ref)
        throw requestSpent(name)
      }
      try {
        ctx.quotas.admit(tenantOf(request), [grant.ref.owner])
      } catch (error) {
        // Parallel requests all passed the quota check before their grants: the ones past it give theirs back.
        await baton.driver.release(grant.ref).catch(() => {})
        throw error
      }
      const leftMs = Math.max(0, Math.floor(grant.startedAt + grant.ttlMs - monotonicNow()))
      ctx.desk.granted(grant.ref, leftMs, grant.waitedMs)
      ctx.dataDir?.noteLease(spec.lockDelayMs + leftMs)
      if (owner !== undefined) ctx.outcomes.remember(owner, grant.ref.token)
      const answer = grantBody(ctx.leaseIds, grant.ref, ttlMs, leftMs)
      return stream ? stream.end(answer) : answer
    } catch (error) {
      outcome = isBatonError(error) || error instanceof HttpError ? (error as { code: string }).code.toLowerCase() : 'error'
      const answer = isBatonError(error, 'ABORTED') && ctx.shuttingDown ? shuttingDown() : error
      if (stream) return stream.fail(answer)
      throw answer
    } finally {
      if (requestId !== undefined && !poll) ctx.requests.delete(requestId)
      ctx.metrics.acquired(kindOf(spec.mode), outcome, (performance.now() - started) / 1000)
    }
  }
  app.post<NameParams & { Body: AcquireBody }>('/v1/locks/:name/acquire', { schema: schemas.acquire }, acquire)
  // Leader election: a campaign is this acquire, fair and exclusive, with a value.
  electionRoutes(app, ctx, acquire)

  app.delete<{ Params: { waitId: string } }>('/v1/waits/:waitId', { schema: schemas.cancelWait }, async (request, reply) => {
    const wait = ctx.waits.get(request.params.waitId)
    if (!wait) throw new HttpError('NOT_FOUND', 'no acquire with this waitId waits on this server')
    demand(accessOf(request), 'lock', wait.name)
    wait.leave(new HttpError('ABORTED', 'the wait was cancelled (DELETE /v1/waits/{waitId})', undefined, 409))
    await wait.done.catch(() => {})
    return reply.code(204).send()
  })

  app.post<LeaseParams & { Body: { ttl?: Duration } }>('/v1/leases/:leaseId/extend', { schema: schemas.extend }, async (request) => {
    const ref = leaseOf(ctx, request, request.params.leaseId)
    refuseIfClosing(ctx)
    const ttlMs = renewalTtl(ctx, ref, request.body?.ttl)
    const refusal = renewalRefusal(ctx, ref)
    if (refusal) throw new HttpError('INVALID_ARGUMENT', refusal)
    const [result] = await renew(ctx, tenantOf(request), [ref], ttlMs)
    if (result?.status !== 'extended') throw leaseGone(ref.name)
    ctx.dataDir?.noteLease(ref.lockDelayMs + result.ttlMs)
    return grantBody(ctx.leaseIds, ref, ref.ttlMs, result.ttlMs)
  })

  app.post<{ Body: { leases: string[]; ttl?: Duration; session?: string } }>('/v1/leases/extend', { schema: schemas.extendMany }, async (request) => {
    refuseIfClosing(ctx)
    const access = accessOf(request)
    const tenant = tenantOf(request)
    // An unknown session (ended, or another server's) is no error: the renewal stands, the answer says the leases did not join it.
    const session = request.body.session === undefined ? undefined : ctx.sessions.find(request.body.session, access)
    let joined = session !== undefined
    const results: { leaseId: string; status: 'extended' | 'lost' | 'forbidden'; expiresAt?: number; ttlMs?: number }[] =
      request.body.leases.map((leaseId) => ({ leaseId, status: 'lost' }))
    // One store batch per ttl: the watchdog sends one ttl for all, so usually one batch.
    const byTtl = new Map<number, { index: number; ref: LeaseRef }[]>()
    request.body.leases.forEach((leaseId, index) => {
      // Not a lease id of this store's servers (edited, forged, another store's): answered as lost, never renewed.
      const ref = ctx.leaseIds.decode(leaseId)
      if (!ref) return
      if (!access.allows('lock', ref.name) || renewalRefusal(ctx, ref)) return void (results[index]!.status = 'forbidden')
      const ttlMs = renewalTtl(ctx, ref, request.body.ttl)
      const group = byTtl.get(ttlMs) ?? []
      group.push({ index, ref })
      byTtl.set(ttlMs, group)
    })
    for (const [ttlMs, group] of byTtl) {
      // Leases past the token's hold quota (not counted here yet) come back forbidden, not renewed.
      const extended = await renew(ctx, tenant, group.map((g) => g.ref), ttlMs, true)
      let longest = 0
      group.forEach(({ index, ref }, i) => {
        const result = extended[i]!
        if (result.status === 'forbidden') return void (results[index]!.status = 'forbidden')
        if (result.status !== 'extended') return
        longest = Math.max(longest, ref.lockDelayMs + result.ttlMs)
        Object.assign(results[index]!, { status: 'extended', expiresAt: Date.now() + result.ttlMs, ttlMs: result.ttlMs })
        if (session && !ctx.sessions.attach(session, ref, ttlMs, result.ttlMs)) joined = false
      })
      if (longest > 0) ctx.dataDir?.noteLease(longest)
    }
    return { ...(session !== undefined || request.body.session !== undefined ? { session: joined } : {}), results }
  })

  const downgrade = async (request: FastifyRequest, leaseId: string | undefined) => {
    const ref = leaseOf(ctx, request, leaseId)
    if (ref.mode !== 'write') throw new HttpError('INVALID_ARGUMENT', 'only a write lease can be downgraded to read')
    if (!(await ctx.desk.downgrade(ref))) throw leaseGone(ref.name)
    const read = { ...ref, mode: 'read' as const }
    // A downgrade keeps the lease's end: answer what the store holds, not a fresh ttl.
    const view = await baton.driver.inspect(ref.name)
    const held = view?.holders.find((h) => h.owner === ref.owner && h.token === ref.token)
    if (!held) throw leaseGone(ref.name)
    ctx.sessions.replace(read)
    return grantBody(ctx.leaseIds, read, ref.ttlMs, Math.max(0, held.expiresAt - Date.now()))
  }
  const release = async (request: FastifyRequest, leaseId: string | undefined) => {
    const ref = leaseOf(ctx, request, leaseId)
    ctx.sessions.detach(ref)
    return { released: await ctx.desk.release(ref) }
  }
  type LeaseInBody = { Body: { leaseId?: string } }
  app.post<LeaseParams>('/v1/leases/:leaseId/downgrade', { schema: schemas.downgrade }, (request) => downgrade(request, request.params.leaseId))
  app.post<LeaseInBody>('/v1/leases/downgrade', { schema: sessionSchemas.downgradeInBody }, (request) => downgrade(request, request.body.leaseId))
  app.delete<LeaseParams>('/v1/leases/:leaseId', { schema: schemas.release }, (request) => release(request, request.params.leaseId))
  app.post<LeaseInBody>('/v1/leases/release', { schema: sessionSchemas.releaseInBody }, (request) => release(request, request.body.leaseId))
  app.delete('/v1/leases', { schema: sessionSchemas.releaseInHeader }, (request) => release(request, undefined))

  app.get<NameParams>('/v1/locks/:name', { schema: schemas.inspect }, async (request) => {
    const name = requestName(request.params.name)
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
    // Paged within the token's scopes: every name fetched is one it may see,
    // so the cursor (the last name of the page) never tells of any other.
    const scopes = access.scopes(prefix)
    const queries = scopes ? scopes.prefixes : [prefix]
    // One more than the page, to know whether another page follows; the store reads only this page.
    const pages = await Promise.all(queries.map((q) => baton.list({ prefix: q, ...(after ? { after } : {}), limit: limit + 1 })))
    const exact = scopes ? scopes.names.filter((name) => after === undefined || compareNames(name, after) > 0) : []
    const named = await Promise.all(exact.map((name) => baton.inspect(name)))
    const byName = new Map<string, LockView>()
    for (const view of [...pages.flat(), ...named]) if (view && access.allows('read', view.name) && !isReserved(view.name)) byName.set(view.name, view)
    const fetched = [...byName.values()].sort((a, b) => compareNames(a.name, b.name))
    const page = fetched.slice(0, limit)
    return {
      locks: page.map(publicView),
      ...(fetched.length > limit ? { nextCursor: Buffer.from(page[page.length - 1]!.name).toString('base64url') } : {}),
    }
  })

  app.delete<NameParams>('/v1/locks/:name', { schema: schemas.forceRelease }, async (request) => {
    const name = requestName(request.params.name)
    const access = accessOf(request)
    demand(access, 'admin', name)
    return { released: await ctx.desk.forceRelease(name, access.name ?? (request.access ? 'an unnamed admin token' : 'open server')) }
  })
}

export { DEFAULT_TTL_MS } from './limits.js'

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
  if (body.weight !== undefined && mode !== 'permit') throw new HttpError('INVALID_ARGUMENT', '"weight" is only for mode "permit"')
  // A value names the one leader: a hold shared with others (read, permit) can not be it.
  if (body.value !== undefined && mode !== 'exclusive') throw new HttpError('INVALID_ARGUMENT', `"value" is only for mode "exclusive" (a leader's value), not "${mode}"`)
  const lockDelayMs = body.lockDelay === undefined ? 0 : parseDuration(body.lockDelay, 'lockDelay', { allowZero: true })
  const spec: LockSpec = { name, kind: kindOf(mode), mode, fair: body.fair ?? false, permits: body.permits ?? 1, lockDelayMs }
  return mode === 'permit' ? { ...spec, weight: parseWeight(body.weight, spec.permits) } : spec
}

/** Owner (idempotent acquires), description (who asks) and a candidate's value for takeDetached, when given. */
function detachedExtras(
  owner: string | undefined, description: string | undefined, value?: string,
): { owner?: string; description?: string; value?: string } {
  return {
    ...(owner !== undefined ? { owner } : {}), ...(description !== undefined ? { description: clipped(description) } : {}),
    ...(value !== undefined ? { value: checkedValue(value) } : {}),
  }
}

/** A description cut to MAX_DESCRIPTION_BYTES of UTF-8, the most a store is given. */
export function clipped(text: string): string {
  // Stores keep a description as text, and Redis puts "\0" and the leader's value after it: a NUL would forge a value.
  if (text.includes('\0')) throw new HttpError('INVALID_ARGUMENT', '"description" must not contain a NUL character')
  if (Buffer.byteLength(text) <= MAX_DESCRIPTION_BYTES) return text
  let cut = text.slice(0, MAX_DESCRIPTION_BYTES)
  while (Buffer.byteLength(cut) > MAX_DESCRIPTION_BYTES) cut = cut.slice(0, -1)
  return cut
}

const requestSpent = (name: string) =>
  new HttpError('LEASE_LOST', `the lease this requestId got on "${name}" has ended (released or expired); send a new requestId to acquire again`)

export const NDJSON = 'application/x-ndjson'

/**
 * The streamed form of a waiting acquire: `{"state":"waiting"}` as soon as
 * the request is in the store's line, then one line with the grant or the
 * error. A client learns that its place is taken without a second request.
 */
export class AnswerStream {
  private started = false
  private heartbeat: NodeJS.Timeout | undefined
  constructor(private readonly reply: FastifyReply, private readonly heartbeatMs: number) {
    reply.hijack()
  }

  /** The "in line" line, then a heartbeat line while quiet, so no client or proxy body timeout ends the wait. */
  waiting(value: unknown): void {
    this.line(value)
    this.heartbeat ??= setInterval(() => this.line({ state: 'waiting' }), this.heartbeatMs)
    this.heartbeat.unref()
  }

  line(value: unknown, status = 200): void {
    const res = this.reply.raw
    if (res.destroyed) return
    if (!this.started) {
      this.started = true
      res.writeHead(status, { 'content-type': `${NDJSON}; charset=utf-8`, 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    }
    res.write(`${JSON.stringify(value)}\n`)
  }

  end(value: unknown): FastifyReply {
    clearInterval(this.heartbeat)
    this.line(value)
    this.reply.raw.end()
    return this.reply
  }

  fail(error: unknown): FastifyReply {
    clearInterval(this.heartbeat)
    const http = toHttpError(error)
    this.line({ error: { code: http.code, message: http.message } }, http.status)
    this.reply.raw.end()
    return this.reply
  }
}

/** `askedTtlMs`: the ttl asked for, the default of later extends; `leftMs`: what the store granted. */
export function grantBody(ids: LeaseIds, ref: HoldRef, askedTtlMs: number, leftMs: number) {
  return {
    leaseId: ids.encode(ref, askedTtlMs), name: ref.name, token: ref.token.toString(), expiresAt: Date.now() + leftMs, ttlMs: leftMs,
    owner: ownerDigest(ref.owner), mode: ref.mode,
  }
}

/**
 * The lease a request names: in the path, else in the body, else in the
 * Baton-Lease-Id header (proxies log paths). 404 for anything that is not an
 * id minted by a server of this store, edited ones included (lease-id.ts).
 */
function leaseOf(ctx: ServerContext, request: FastifyRequest, leaseId: string | undefined): LeaseRef {
  const header = request.headers[LEASE_HEADER]
  const id = leaseId ?? (typeof header === 'string' ? header : undefined)
  if (id === undefined) throw new HttpError('INVALID_ARGUMENT', 'name the lease: in the path, as "leaseId" in the body, or in the Baton-Lease-Id header')
  const ref = ctx.leaseIds.decode(id)
  if (!ref) throw new HttpError('NOT_FOUND', 'this is not a lease id of a server of this store (unknown, edited, or from another store)')
  demand(accessOf(request), 'lock', ref.name)
  return ref
}

/**
 * The ttl of a renewal: the one asked (the caps hook checked it), else the
 * one the lease was granted with, held to --max-ttl as it is now (a lease
 * granted before the cap was lowered renews to the cap).
 */
function renewalTtl(ctx: ServerContext, ref: LeaseRef, asked: Duration | undefined): number {
  return asked === undefined ? Math.min(ref.ttlMs, ctx.caps.maxTtlMs) : ctx.baton.ttl(asked)
}

/**
 * Why a lease may not be renewed here, if it may not: its lock delay (which
 * the store keeps with the hold, so a renewal can not lower it) is above
 * --max-lock-delay as it is now. It runs to its end, or its holder releases it.
 */
function renewalRefusal(ctx: ServerContext, ref: LeaseRef): string | undefined {
  if (ref.lockDelayMs <= ctx.caps.maxLockDelayMs) return undefined
  return `this lease's lock delay (${ref.lockDelayMs} ms) is above this server's --max-lock-delay (${ctx.caps.maxLockDelayMs} ms): it is not renewed here; release it and acquire again`
}

/**
 * Renews leases through this server. A lease this server does not track yet
 * (granted by another server of the store, or by this server before a
 * restart) counts against the renewing token's hold quota from its first
 * renewal here, until it ends: a restart does not hand a token a fresh
 * quota. Over the quota: 429, or (`perLease`, the batch) `forbidden` for
 * the leases past it, nothing renewed for them.
 */
async function renew(
  ctx: ServerContext, tenant: string, refs: readonly LeaseRef[], ttlMs: number, perLease = false,
): Promise<(ExtendResult | { status: 'forbidden' })[]> {
  const admitted: LeaseRef[] = []
  const over = new Set<LeaseRef>()
  for (const ref of refs) {
    if (ctx.desk.tracks(ref.owner)) continue
    try {
      ctx.quotas.admit(tenant, [ref.owner])
      admitted.push(ref)
    } catch (error) {
      if (!perLease) {
        for (const done of admitted) ctx.quotas.ended(done.owner)
        throw error
      }
      over.add(ref)
    }
  }
  const asked = refs.filter((ref) => !over.has(ref))
  let results: ExtendResult[]
  try {
    results = await ctx.desk.extend(asked, ttlMs)
  } catch (error) {
    for (const ref of admitted) ctx.quotas.ended(ref.owner)
    throw error
  }
  const byRef = new Map(asked.map((ref, i) => [ref, results[i]!]))
  for (const ref of admitted) {
    const result = byRef.get(ref)!
    if (result.status === 'extended') ctx.desk.adopt(ref, result.ttlMs)
    else ctx.quotas.ended(ref.owner)
  }
  return refs.map((ref) => byRef.get(ref) ?? { status: 'forbidden' as const })
}

const LEASE_HEADER = 'baton-lease-id'

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
    // Owners come already shown as publicOwner (the digest of a secret owner), as every path shows them.
    holders: view.holders.map((h) => ({
      owner: h.owner, token: h.token.toString(), mode: h.mode, ...(h.weight !== undefined ? { weight: h.weight } : {}), expiresAt: h.expiresAt, ...who(h), ...(h.value !== undefined ? { value: h.value } : {}),
    })),
    waiters: view.waiters.map((w) => ({ owner: w.owner, mode: w.mode, ...(w.weight !== undefined ? { weight: w.weight } : {}), ...who(w) })),
    lastToken: view.lastToken.toString(),
  }
}

/** A hold's or waiter's description and since, when the store keeps them (issue 17: who holds it). */
function who(entry: { description?: string; since?: number }): { description?: string; since?: number } {
  return {
    ...(entry.description !== undefined ? { description: entry.description } : {}),
    ...(entry.since !== undefined ? { since: entry.since } : {}),
  }
}

export type { HoldRef, AcquireBody, NameParams }
export { leaseOf, leaseGone }
