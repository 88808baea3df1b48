/**
 * POST /v1/locks/{name}/acquire: one hold, at once or after waiting (a
 * long-poll, or an NDJSON stream for the http:// driver), idempotent per
 * requestId, counted against the token's quotas. The campaign route is this
 * handler with a leader's terms. Apart from the other lock routes because
 * waiting, idempotency and late grants are its own reasons to change.
 */
import { randomBytes } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { isBatonError } from '../index.js'
import { type DetachedGrant, monotonicNow, parseWait } from '../internal-api.js'
import { detachedExtras, specOf, type AcquireBody, type NameParams } from './acquire-request.js'
import { AnswerStream, NDJSON } from './answer-stream.js'
import { demand } from './auth.js'
import { accessOf, refuseGrantsIfNotReady, shuttingDown, tenantOf, type ServerContext } from './context.js'
import { kindOf } from './events.js'
import { HttpError } from './http-errors.js'
import { grantBody } from './lease-answers.js'
import { idempotentOwner, ownerDigest } from './lease-id.js'
import { requestName } from './lease-secret.js'
import { LongPoll, STILL_WAITING } from './waits.js'

export type AcquireHandler = (request: FastifyRequest<NameParams & { Body: AcquireBody }>, reply: FastifyReply) => Promise<unknown>

/** The acquire handler on this server's context. */
export function acquireHandler(ctx: ServerContext): AcquireHandler {
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
      const now = Date.now() // read before the monotonic clock: see grantBody
      const leftMs = Math.max(0, Math.floor(grant.startedAt + grant.ttlMs - monotonicNow()))
      ctx.desk.granted(grant.ref, leftMs, grant.waitedMs)
      ctx.dataDir?.noteLease(spec.lockDelayMs + leftMs)
      if (owner !== undefined) ctx.outcomes.remember(owner, grant.ref.token)
      const answer = grantBody(ctx.leaseIds, grant.ref, ttlMs, leftMs, now)
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
  return acquire
}

const requestSpent = (name: string) =>
  new HttpError('LEASE_LOST', `the lease this requestId got on "${name}" has ended (released or expired); send a new requestId to acquire again`)
