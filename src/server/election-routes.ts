import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MAX_VALUE_BYTES } from '../core/driver.js'
import { requestName } from './lease-secret.js'
import { demand } from './auth.js'
import { accessOf, tenantOf, type ServerContext } from './context.js'
import { HttpError } from './http-errors.js'
import { publicOwner } from '../core/owner.js'
import { leaderHold } from '../primitives/election.js'
import { leaseGone, leaseOf, type AcquireBody, type NameParams } from './routes.js'
import { electionSchemas } from './schemas.js'

const HEARTBEAT_MS = 15_000

type LeaseBody = { Body: { leaseId?: string; value?: string } }

/**
 * Leader election over HTTP (docs/election.md): campaign is the acquire
 * route, fair and exclusive, with the candidate's value; proclaim, resign
 * and leader act on the store through the driver like the lease routes; a
 * per-election event stream follows the leader with the library's own
 * election.observe() on this server's client (the store's notices, no polling).
 */
export function electionRoutes(
  app: FastifyInstance, ctx: ServerContext,
  acquire: (request: FastifyRequest<NameParams & { Body: AcquireBody }>, reply: FastifyReply) => Promise<unknown>,
): void {
  const { baton } = ctx

  app.post<NameParams & { Body: AcquireBody }>('/v1/elections/:name/campaign', { schema: electionSchemas.campaign }, (request, reply) => {
    request.body = { ...request.body, mode: 'exclusive', fair: true, value: request.body.value ?? '' }
    return acquire(request, reply)
  })

  app.get<NameParams>('/v1/elections/:name', { schema: electionSchemas.leader }, async (request) => {
    const name = requestName(request.params.name)
    demand(accessOf(request), 'read', name)
    const holder = leaderHold(await baton.driver.inspect(name))
    if (!holder) return { leader: null }
    return {
      leader: {
        value: holder.value ?? '', token: holder.token.toString(), owner: publicOwner(holder.owner), expiresAt: holder.expiresAt,
        ...(holder.since !== undefined ? { since: holder.since } : {}),
        ...(holder.description !== undefined ? { description: holder.description } : {}),
      },
    }
  })

  app.post<NameParams & LeaseBody>('/v1/elections/:name/proclaim', { schema: electionSchemas.proclaim }, async (request) => {
    const ref = leaseOfElection(request)
    const value = checkedValue(request.body.value ?? '')
    if (!baton.driver.proclaim) throw new HttpError('INVALID_ARGUMENT', `the ${baton.store} store offers no leader election`)
    if (!(await baton.driver.proclaim(ref, value))) throw leaseGone(ref.name)
    return { proclaimed: true }
  })

  app.post<NameParams & LeaseBody>('/v1/elections/:name/resign', { schema: electionSchemas.resign }, async (request) => {
    const ref = leaseOfElection(request)
    ctx.sessions.detach(ref)
    return { released: await ctx.desk.release(ref) }
  })

  app.get<NameParams>('/v1/elections/:name/events', { schema: electionSchemas.leaderEvents, config: { streams: true } as Record<string, unknown> }, async (request, reply) => {
    const name = requestName(request.params.name)
    demand(accessOf(request), 'read', name)
    const election = baton.election(name)
    const stop = new AbortController()
    // Throws INVALID_ARGUMENT (400) before the stream starts on a store without elections.
    const changes = election.observe({ signal: stop.signal })
    const leaveQuota = ctx.quotas.enter(tenantOf(request), 'streams')
    reply.hijack()
    const res = reply.raw
    let ended = false
    const stream = { end: () => finish(), buffered: () => (ended ? 0 : res.writableLength) }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no',
    })
    res.write(': baton leader events\n\n')
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS)
    heartbeat.unref()
    ctx.streams.add(stream)
    function finish(): void {
      if (ended) return
      ended = true
      stop.abort()
      clearInterval(heartbeat)
      ctx.streams.delete(stream)
      leaveQuota()
      res.end()
    }
    res.once('close', finish)
    void (async () => {
      try {
        for await (const change of changes) {
          if (ended) break
          const leader = change && { value: change.value, token: change.token.toString() }
          res.write(`event: leader\ndata: ${JSON.stringify({ leader })}\n\n`)
        }
      } catch (error) {
        if (!ended) res.write(`event: error\ndata: ${JSON.stringify({ message: (error as Error).message })}\n\n`)
      } finally {
        finish()
      }
    })()
    return reply
  })

  /** The election's lease: named in the body or the Baton-Lease-Id header, and of this election's name. */
  function leaseOfElection(request: FastifyRequest<NameParams & LeaseBody>) {
    const name = requestName(request.params.name)
    const ref = leaseOf(ctx, request, request.body.leaseId)
    if (ref.name !== name) throw new HttpError('INVALID_ARGUMENT', `this lease is of "${ref.name}", not of the election "${name}"`)
    // A read or permit hold shares the name with others: it is not a leadership, and its value would name one of several.
    if (ref.mode !== 'exclusive') throw new HttpError('INVALID_ARGUMENT', `this lease is a "${ref.mode}" hold of "${name}", not a leadership (an exclusive hold)`)
    return ref
  }
}

/** A candidate's value within the bound the stores keep (bytes: the schema counts characters). */
export function checkedValue(value: string): string {
  if (value.includes('\0')) throw new HttpError('INVALID_ARGUMENT', '"value" must not contain a NUL character (stores keep it as text)')
  const bytes = Buffer.byteLength(value)
  if (bytes > MAX_VALUE_BYTES) throw new HttpError('INVALID_ARGUMENT', `"value" is ${bytes} bytes; at most ${MAX_VALUE_BYTES} UTF-8 bytes are kept`)
  return value
}
