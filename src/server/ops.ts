import type { FastifyInstance } from 'fastify'
import { validatePrefix } from '../core/names.js'
import { accessOf, type ServerContext } from './context.js'
import { dashboardRoutes } from './dashboard/index.js'
import type { PublicEventType } from './events.js'
import { HttpError } from './http-errors.js'
import { schemas } from './schemas.js'

const HEARTBEAT_MS = 15_000
const VERSION = '0.1.0'

/** Events, health, readiness, metrics, the store's description and the dashboard page. */
export function opsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get<{ Querystring: { prefix?: string; types?: string } }>('/v1/events', { schema: schemas.events }, async (request, reply) => {
    const access = accessOf(request)
    const prefix = validatePrefix(request.query.prefix ?? '')
    if (!access.coversPrefix(prefix)) throw new HttpError('FORBIDDEN', `this token may not read names under "${prefix}"`)
    const types = new Set((request.query.types ?? 'grant,release,expire,lost').split(',') as PublicEventType[])
    reply.hijack()
    const res = reply.raw
    // Subscribed before the first byte goes out: a client that saw the stream open misses nothing after.
    const unsubscribe = ctx.hub.subscribe((event) => {
      if (!types.has(event.type) || !event.name.startsWith(prefix) || !access.allows('read', event.name)) return
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
    })
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.write(': baton events\n\n')
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS)
    heartbeat.unref()
    const stream = { end: () => res.end() }
    ctx.streams.add(stream)
    res.once('close', () => {
      unsubscribe()
      clearInterval(heartbeat)
      ctx.streams.delete(stream)
    })
  })

  app.get('/v1/info', { schema: schemas.info }, async () => ({
    store: ctx.baton.store, capabilities: ctx.baton.driver.capabilities, version: VERSION,
  }))

  app.get('/healthz', { schema: schemas.health, config: { open: true } }, async () => ({ ok: true }))

  app.get('/readyz', { schema: schemas.ready, config: { open: true } }, async (_request, reply) => {
    if (ctx.shuttingDown) return reply.code(503).send({ ready: false, reason: 'shutting down' })
    const left = ctx.dataDir?.restartDelayLeftMs() ?? 0
    if (left > 0) {
      void reply.header('retry-after', String(Math.ceil(left / 1000)))
      return reply.code(503).send({
        ready: false, retryAfterMs: left,
        reason: `restarted without its leases: grants resume in ${Math.ceil(left / 1000)} s, once every lease it could have granted before has run out`,
      })
    }
    try {
      await ctx.baton.inspect('baton/readyz')
    } catch (error) {
      return reply.code(503).send({ ready: false, reason: `the store does not answer: ${(error as Error).message.replace(/^baton: /, '')}` })
    }
    return { ready: true, store: ctx.baton.store }
  })

  app.get('/metrics', { schema: { summary: 'Prometheus metrics', tags: ['server'] } }, async (request, reply) => {
    if (!accessOf(request).everyName) throw new HttpError('FORBIDDEN', 'metrics cover every name; this token is limited to some prefixes')
    return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics())
  })

  dashboardRoutes(app)
}
