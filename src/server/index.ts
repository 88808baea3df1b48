import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import type { Baton } from '../baton.js'
import type { TokenAuth } from './auth.js'
import type { ServerContext } from './context.js'
import type { DataDir } from './data-dir.js'
import { EventHub } from './events.js'
import { errorSchema, HttpError, sendError, toHttpError } from './http-errors.js'
import { DEFAULT_WAIT_CAPS, WaitLimits, type WaitCaps } from './limits.js'
import { Metrics } from './metrics.js'
import { opsRoutes } from './ops.js'
import { lockRoutes } from './routes.js'
import { lockView } from './schemas.js'
import { LeaseDesk } from './leases.js'

/** A route option's hooks as an array (fastify takes one function or several). */
function hooks<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

export interface LockServerOptions {
  /** The library client the server serves; it owns no lock logic of its own. */
  baton: Baton
  auth?: TokenAuth
  dataDir?: DataDir
  waitCaps?: WaitCaps
  /** Largest request body in bytes (default 64 KiB: a batch extend of ~150 lease ids per KiB). */
  bodyLimit?: number
}

export interface LockServer {
  readonly app: FastifyInstance
  listen(host: string, port: number): Promise<string>
  /** Graceful: stop accepting, answer waiting acquires 503, end event streams; held leases run to their ttl. */
  close(): Promise<void>
}

/**
 * The lock service: HTTP/JSON in front of one Baton client. Stateless: what
 * a lease needs travels in its id, so servers sharing a store serve each
 * other's leases.
 */
export async function createLockServer(options: LockServerOptions): Promise<LockServer> {
  const { baton } = options
  baton.keeper.secretOwners = true
  const hub = new EventHub(baton.store)
  const desk = new LeaseDesk(baton.driver, hub, baton.keeper.clientId)
  const limits = new WaitLimits(options.waitCaps ?? DEFAULT_WAIT_CAPS)
  const metrics = new Metrics(hub, { held: () => desk.size, waiting: () => limits.waiting, store: baton.store })
  const ctx: ServerContext = {
    baton, hub, desk, metrics, limits, dataDir: options.dataDir,
    waits: new Map(), requests: new Set(), waiting: new Set(), streams: new Set(), shuttingDown: false,
  }

  const app = Fastify({
    logger: false, // a request log could carry bearer tokens and lease ids
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    // Lease ids and percent-encoded 256-byte names are longer than find-my-way's default of 100.
    routerOptions: { maxParamLength: 4096 },
    // Router-level refusals (bad URL encoding, too long) answer in the API's error format too.
    frameworkErrors: (error, _request, reply) => sendError(reply, error),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  })
  app.addSchema(errorSchema)
  app.addSchema(lockView)
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'baton lock server', version: '0.1.0', description: 'Distributed locks over HTTP: mutex, fair mutex, read-write lock, semaphore.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: options.auth ? [{ bearer: [] }] : [],
    },
  })
  // null: open (no --tokens); accessOf() then answers OPEN.
  app.decorateRequest('access', null as never)

  // Hooks are added per route, each only where it does something: a global
  // hook runs (and reads the costly request.routeOptions) on every request.
  // Callback style: an async hook costs a promise per request on the hot path.
  app.addHook('onRoute', (route) => {
    const open = (route.config as { open?: boolean } | undefined)?.open === true
    const auth = options.auth
    if (auth && !open) {
      route.onRequest = [...hooks(route.onRequest), (request, _reply, done) => {
        try {
          request.access = auth.check(request.headers.authorization)
        } catch (error) {
          return done(error as Error)
        }
        done()
      }]
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.includes('POST')) {
      // A POST without a body means all defaults.
      route.preValidation = [(request, _reply, done) => {
        if (request.body === undefined) request.body = {}
        done()
      }, ...hooks(route.preValidation)]
    }
    const record = metrics.route(route.url)
    route.onResponse = [...hooks(route.onResponse), (request, reply, done) => {
      record(request.method, reply.statusCode, reply.elapsedTime / 1000)
      done()
    }]
  })
  app.setErrorHandler((error, _request, reply) => {
    const http = toHttpError(error)
    if (http.message.startsWith('internal error')) console.error(`baton serve: ${(error as Error).stack ?? String(error)}`)
    return sendError(reply, http)
  })
  const unmatched = metrics.route('unmatched')
  app.setNotFoundHandler((request, reply) => {
    unmatched(request.method, 404, reply.elapsedTime / 1000)
    return sendError(reply, new HttpError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`))
  })

  lockRoutes(app, ctx)
  opsRoutes(app, ctx)
  app.get('/openapi.json', { schema: { hide: true }, config: { open: true } }, async () => app.swagger())
  await app.ready()

  return {
    app,
    async listen(host, port) {
      return app.listen({ host, port })
    },
    async close() {
      ctx.shuttingDown = true
      for (const controller of ctx.waiting) controller.abort(new Error('the server is shutting down'))
      for (const stream of ctx.streams) stream.end()
      await app.close()
      metrics.close()
      desk.close()
      hub.close()
      await baton.close()
    },
  }
}
