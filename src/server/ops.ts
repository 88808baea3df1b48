import type { FastifyInstance } from 'fastify'
import { validatePrefix } from '../core/names.js'
import { accessOf, restartWaitLeftMs, tenantOf, restartWaitReason, type ServerContext } from './context.js'
import { dashboardRoutes } from './dashboard/index.js'
import type { PublicEvent, PublicEventType } from './events.js'
import { HttpError } from './http-errors.js'
import { GrantHistory } from './history.js'
import { schemas } from './schemas.js'

const HEARTBEAT_MS = 15_000
/** How long an ended stream's unread buffer is kept for its reader before the connection is cut. */
const STALLED_STREAM_MS = 30_000
const VERSION = '0.1.0'

/** Events, health, readiness, metrics, the store's description and the dashboard page. */
export function opsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get<{ Querystring: { prefix?: string; types?: string } }>('/v1/events', { schema: schemas.events }, async (request, reply) => {
    const access = accessOf(request)
    const prefix = validatePrefix(request.query.prefix ?? '')
    if (!access.coversPrefix(prefix)) throw new HttpError('FORBIDDEN', `this token may not read names under "${prefix}"`)
    const types = new Set((request.query.types ?? 'grant,release,expire,lost,forced').split(',') as PublicEventType[])
    const lastEventId = request.headers['last-event-id']
    const leaveQuota = ctx.quotas.enter(tenantOf(request), 'streams')
    reply.hijack()
    const res = reply.raw
    const maxBuffered = ctx.eventBufferBytes
    let ended = false
    const stream = { end: () => finish(), buffered: () => (ended ? 0 : res.writableLength) }
    // A reader that does not keep up is not buffered for without bound: past
    // the cap its stream ends with a last event saying so, and it resumes
    // with Last-Event-ID from the server's ring.
    const write = (text: string) => {
      if (ended) return
      res.write(text)
      if (res.writableLength > maxBuffered) {
        ctx.metrics.streamDropped()
        finish(`event: overflow\ndata: ${JSON.stringify({ reason: `this stream fell more than ${maxBuffered} bytes behind; reconnect with Last-Event-ID to resume from the server's latest events` })}\n\n`)
      }
    }
    const send = (event: PublicEvent & { id: string }) => {
      if (!types.has(event.type) || !event.name.startsWith(prefix) || !access.allows('read', event.name)) return
      write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
    }
    // Subscribed, and the missed events replayed, before anything can happen in between (same tick).
    const unsubscribe = ctx.hub.subscribe(send)
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    })
    res.write(': baton events\n\n')
    if (typeof lastEventId === 'string') {
      const resume = ctx.hub.since(lastEventId)
      if (resume.ok) for (const event of resume.events) send(event)
      else write(`event: gap\ndata: ${JSON.stringify({ reason: resume.reason })}\n\n`)
    }
    // The id to resume from, even if no event comes before the client reconnects.
    write(`id: ${ctx.hub.lastId}\n\n`)
    const heartbeat = setInterval(() => write(': keep-alive\n\n'), HEARTBEAT_MS)
    heartbeat.unref()
    ctx.streams.add(stream)
    function finish(last?: string): void {
      if (ended) return
      ended = true
      unsubscribe()
      clearInterval(heartbeat)
      if (last) res.write(last)
      res.end()
      // Ended, but a reader that never reads would keep the buffer: cut it off after a while.
      const cut = setTimeout(() => res.destroy(), STALLED_STREAM_MS)
      cut.unref()
      res.once('close', () => clearTimeout(cut))
    }
    res.once('close', () => {
      unsubscribe()
      clearInterval(heartbeat)
      ctx.streams.delete(stream)
      leaveQuota()
      ended = true
    })
  })

  const history = new GrantHistory(ctx.hub)
  app.addHook('onClose', async () => history.close())
  app.get('/v1/history', { schema: schemas.history }, async () => ({ seconds: history.recent() }))

  app.get('/v1/info', { schema: schemas.info }, async () => ({
    store: ctx.baton.store, capabilities: ctx.baton.driver.capabilities, version: VERSION,
    defaultTtlMs: ctx.defaultTtlMs, maxTtlMs: ctx.caps.maxTtlMs, maxLockDelayMs: ctx.caps.maxLockDelayMs,
  }))

  app.get('/healthz', { schema: schemas.health, config: { open: true } }, async () => ({ ok: true }))

  app.get('/readyz', { schema: schemas.ready, config: { open: true } }, async (_request, reply) => {
    if (ctx.shuttingDown) return reply.code(503).send({ ready: false, reason: 'shutting down' })
    const left = restartWaitLeftMs(ctx)
    if (left > 0) {
      void reply.header('retry-after', String(Math.ceil(left / 1000)))
      return reply.code(503).send({ ready: false, retryAfterMs: left, reason: restartWaitReason(ctx, left) })
    }
    try {
      await ctx.baton.inspect('baton/readyz')
    } catch (error) {
      return reply.code(503).send({ ready: false, reason: `the store does not answer: ${(error as Error).message.replace(/^baton: /, '')}` })
    }
    return { ready: true, store: ctx.baton.store }
  })

  app.get('/metrics', { schema: schemas.metrics }, async (request, reply) => {
    if (!accessOf(request).everyName) throw new HttpError('FORBIDDEN', 'metrics cover every name; this token is limited to some prefixes')
    return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics())
  })

  dashboardRoutes(app)
}
