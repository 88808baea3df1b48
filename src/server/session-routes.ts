import type { FastifyInstance, FastifyRequest } from 'fastify'
import { parseDuration } from '../core/duration.js'
import { accessOf, tenantOf, type ServerContext } from './context.js'
import type { LeaseRef } from './lease-id.js'
import { HttpError } from './http-errors.js'
import { sessionSchemas } from './schemas.js'
import { DEFAULT_SESSION_TTL_MS, MAX_SESSION_TTL_MS } from './sessions.js'

type SessionParams = { Params: { sessionId: string } }

/**
 * Client sessions (docs/server-sessions.md): open, keep alive (path or body
 * form), end. A session belongs to the token that opened it: every other
 * token gets the 404 of an unknown id (SessionTable.find).
 */
export function sessionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const sessions = ctx.sessions

  app.post<{ Body: { ttl?: number | string } }>('/v1/sessions', { schema: sessionSchemas.create }, async (request, reply) => {
    if (ctx.shuttingDown) throw new HttpError('BACKEND_UNAVAILABLE', 'the server is shutting down; retry on another server or after it restarts', 1)
    const access = accessOf(request)
    // A session renews leases and proves waiters alive: of no use to a token that may lock nothing.
    if (!access.hasRight('lock')) throw new HttpError('FORBIDDEN', 'this token may not open a session (it has no "lock" right)')
    const ttlMs = request.body.ttl === undefined ? DEFAULT_SESSION_TTL_MS : parseDuration(request.body.ttl, 'ttl')
    if (ttlMs < 1000 || ttlMs > MAX_SESSION_TTL_MS) throw new HttpError('INVALID_ARGUMENT', `a session's "ttl" must be from 1 s to ${MAX_SESSION_TTL_MS / 60_000} min, got ${ttlMs} ms`)
    const leave = ctx.quotas.enter(tenantOf(request), 'sessions')
    return reply.code(201).send(sessions.create(ttlMs, { identity: access.identity, leave }))
  })

  /** Lease ids the client gives up, checked like any lease id: only well-formed ones its token may lock. */
  const refsOf = (request: FastifyRequest, ids: readonly string[] | undefined): LeaseRef[] => {
    const access = accessOf(request)
    return (ids ?? []).map((id) => ctx.leaseIds.decode(id)).filter((ref): ref is LeaseRef => ref !== null && access.allows('lock', ref.name))
  }

  app.post<SessionParams & { Body: { giveUp?: string[] } }>('/v1/sessions/:sessionId/keepalive', { schema: sessionSchemas.keepalive }, async (request) =>
    sessions.keepalive(sessions.demand(request.params.sessionId, accessOf(request)), refsOf(request, request.body.giveUp)))

  app.post<{ Body: { sessionId: string; giveUp?: string[] } }>('/v1/sessions/keepalive', { schema: sessionSchemas.keepaliveInBody }, async (request) =>
    sessions.keepalive(sessions.demand(request.body.sessionId, accessOf(request)), refsOf(request, request.body.giveUp)))

  app.delete<SessionParams>('/v1/sessions/:sessionId', { schema: sessionSchemas.end }, async (request) =>
    ({ released: (await sessions.end(sessions.demand(request.params.sessionId, accessOf(request)))) > 0 }))
}
