/**
 * The lock and lease routes of docs/http-api.md, assembled: each family in
 * its own file, each route a thin call into the library.
 */
import type { FastifyInstance } from 'fastify'
import { acquireHandler, type AcquireHandler } from './acquire-route.js'
import type { AcquireBody, NameParams } from './acquire-request.js'
import { demand } from './auth.js'
import { accessOf, type ServerContext } from './context.js'
import { electionRoutes } from './election-routes.js'
import { HttpError } from './http-errors.js'
import { leaseRoutes } from './lease-routes.js'
import { lockViewRoutes } from './lock-view-routes.js'
import { schemas } from './schemas.js'

export function lockRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const acquire: AcquireHandler = acquireHandler(ctx)
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

  leaseRoutes(app, ctx)
  lockViewRoutes(app, ctx)
}
