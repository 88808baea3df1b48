/**
 * The routes that act on a held lease: extend (one, or a batch for the
 * watchdog), downgrade, release; and the renewal rules they share (ttl,
 * lock-delay cap, quota of leases first renewed here).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ExtendResult } from '../internal-api.js'
import { accessOf, shuttingDown, tenantOf, type ServerContext } from './context.js'
import { HttpError } from './http-errors.js'
import { grantBody, leaseGone, leaseOf } from './lease-answers.js'
import type { LeaseRef } from './lease-id.js'
import type { Duration } from './acquire-request.js'
import { schemas, sessionSchemas } from './schemas.js'

type LeaseParams = { Params: { leaseId: string } }

/** Extend, downgrade and release of docs/http-api.md. */
export function leaseRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { baton } = ctx

  app.post<LeaseParams & { Body: { ttl?: Duration } }>('/v1/leases/:leaseId/extend', { schema: schemas.extend }, async (request) => {
    const ref = leaseOf(ctx, request, request.params.leaseId)
    refuseIfClosing(ctx)
    const ttlMs = renewalTtl(ctx, ref, request.body?.ttl)
    const refusal = renewalRefusal(ctx, ref)
    if (refusal) throw new HttpError('INVALID_ARGUMENT', refusal)
    // The renewed end counts from when the renewal was sent, as the core's own deadline does.
    const sentAt = Date.now()
    const [result] = await renew(ctx, tenantOf(request), [ref], ttlMs)
    if (result?.status !== 'extended') throw leaseGone(ref.name)
    ctx.dataDir?.noteLease(ref.lockDelayMs + result.ttlMs)
    return grantBody(ctx.leaseIds, ref, ref.ttlMs, result.ttlMs, sentAt)
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
      const sentAt = Date.now()
      const extended = await renew(ctx, tenant, group.map((g) => g.ref), ttlMs, true)
      let longest = 0
      group.forEach(({ index, ref }, i) => {
        const result = extended[i]!
        if (result.status === 'forbidden') return void (results[index]!.status = 'forbidden')
        if (result.status !== 'extended') return
        longest = Math.max(longest, ref.lockDelayMs + result.ttlMs)
        Object.assign(results[index]!, { status: 'extended', expiresAt: sentAt + result.ttlMs, ttlMs: result.ttlMs })
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
    // Exactly the store's end (one clock read), not one recomputed after the fact.
    const now = Date.now()
    return grantBody(ctx.leaseIds, read, ref.ttlMs, Math.max(0, Math.floor(held.expiresAt - now)), now)
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

function refuseIfClosing(ctx: ServerContext): void {
  if (ctx.shuttingDown) throw shuttingDown()
}
