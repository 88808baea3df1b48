import Fastify, { type FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import type { Baton } from '../baton.js'
import type { TokenAuth } from './auth.js'
import { tenantOf, type ServerContext } from './context.js'
import type { DataDir } from './data-dir.js'
import { DEFAULT_EVENT_RING, EventHub } from './events.js'
import { errorSchema, HttpError, sendError, toHttpError } from './http-errors.js'
import { checkCaps, defaultTtlOf, DEFAULT_LEASE_CAPS, DEFAULT_TENANT_QUOTAS, DEFAULT_WAIT_CAPS, Quotas, WaitLimits, type LeaseCaps, type TenantQuotas, type WaitCaps } from './limits.js'
import { parseWait } from '../core/options.js'
import { monotonicNow } from '../core/clock.js'
import { Metrics } from './metrics.js'
import { opsRoutes } from './ops.js'
import { lockRoutes } from './routes.js'
import { multiRoutes } from './multi-routes.js'
import { openapiOptions } from './openapi.js'
import { coerceIntegerQuery, componentSchemas, integerQueryFields } from './schemas.js'
import { requestGuard, type OriginRules, type RequestGuard } from './origin.js'
import { LeaseDesk } from './leases.js'
import { LeaseIds } from './lease-id.js'
import { newSecret, StoreSecret } from './lease-secret.js'
import { RequestWindow } from './request-window.js'
import { sessionRoutes } from './session-routes.js'
import { SessionTable } from './sessions.js'
import { slashNames } from './slash-names.js'
import { CertificateReloader, readTls, type TlsFiles } from './tls.js'
import type { Server as HttpsServer } from 'node:https'
import { DEFAULT_POLL_MAX_MS } from './waits.js'

/** The `wait` of an acquire body, 0 when absent or not valid (the route then says why). */
function waitOf(body: unknown): number {
  const wait = (body as { wait?: unknown } | undefined)?.wait
  if (wait === undefined) return 0
  try {
    return parseWait(wait as number | string, 0)
  } catch {
    return 0
  }
}

/** The lease ids of this server: under the operator's secret, else the store's, the data directory's or this process's. */
async function leaseSecretOf(options: LockServerOptions, caps: LeaseCaps): Promise<{ ids: LeaseIds; source: LockServer['leaseSecretSource']; store?: StoreSecret }> {
  if (options.leaseSecret !== undefined) return { ids: new LeaseIds(options.leaseSecret), source: 'operator' }
  if (options.privateStore) {
    // The embedded store dies with the process: no other server shares it.
    const kept = options.dataDir?.leaseSecret(newSecret)
    return { ids: new LeaseIds(kept ?? newSecret()), source: kept ? 'data-dir' : 'process' }
  }
  const candidate = newSecret()
  const ids = new LeaseIds(candidate)
  const { baton } = options
  const store = await StoreSecret.open(baton.driver, ids, candidate, baton.keeper.clientId, caps.maxTtlMs + caps.maxLockDelayMs)
  return { ids, source: 'store', store }
}

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
  /** Caps on ttl and lock delay (default DEFAULT_LEASE_CAPS); above them, 400. */
  caps?: LeaseCaps
  /**
   * The in-process store without --data-dir: grants wait this long after
   * start, since a lease granted by the previous run may still be held by
   * its client. 0 (default) when nothing can be held (a shared store keeps
   * its own state; --data-dir knows; or the operator says so).
   */
  restartWaitMs?: number
  /** The store is this server's own (the embedded memory store): no other client can end its leases. */
  privateStore?: boolean
  /** Per-token quotas (each one not given: DEFAULT_TENANT_QUOTAS). */
  quotas?: Partial<TenantQuotas>
  /** Bytes an event stream may fall behind before it is ended (default 1 MiB). */
  eventBufferBytes?: number
  /** Events kept for Last-Event-ID resume (default DEFAULT_EVENT_RING). */
  eventRing?: number
  /** Host and Origin checks (see origin.ts); set up when the server listens. */
  origins?: OriginRules
  /** Time to receive a request's headers (default 10 s) and whole request (default 30 s); answers may take longer (long-polls, streams). */
  headersTimeoutMs?: number
  requestTimeoutMs?: number
  /** Connections at once (default 8192); beyond, new connections are closed at once. */
  maxConnections?: number
  /** How often Node checks the two timeouts above (default 1 s). */
  timeoutCheckMs?: number
  /**
   * The secret lease ids are authenticated under (lease-id.ts), shared by
   * every server of the store: --lease-secret. Without it, the store keeps
   * one (lease-secret.ts), or for the embedded store the data directory, or
   * else this process.
   */
  leaseSecret?: string
  /** Largest request body in bytes (default 64 KiB: a batch extend of ~150 lease ids per KiB). */
  bodyLimit?: number
  /** Longest plain JSON long-poll, answered 202 "still waiting" after it (default 50 s); NDJSON heartbeats every third of it. */
  pollMaxMs?: number
  /** HTTPS with these files (client certificates required when `ca` is given), reloaded on change and by reloadTls(). */
  tls?: TlsFiles
  /** Where certificate reloads on file change are told (default: stdout). */
  log?: (line: string) => void
}

export interface LockServer {
  readonly app: FastifyInstance
  /** The URL of the address bound (http://0.0.0.0:7420 for all interfaces). */
  listen(host: string, port: number): Promise<string>
  /** Where the lease secret comes from, for the start-up line. */
  readonly leaseSecretSource: 'operator' | 'store' | 'data-dir' | 'process'
  /** Graceful: stop accepting, answer waiting acquires 503, end event streams; held leases run to their ttl. */
  close(): Promise<void>
  /** Reads the TLS files again for new connections (SIGHUP); throws, keeping the old ones, when they are not usable. Undefined without TLS. */
  readonly reloadTls: (() => void) | undefined
}

/**
 * The lock service: HTTP/JSON in front of one Baton client. Stateless: what
 * a lease needs travels in its id, so servers sharing a store serve each
 * other's leases.
 */
export async function createLockServer(options: LockServerOptions): Promise<LockServer> {
  const { baton } = options
  // First: unusable certificate files are refused before anything is set up.
  const tls = options.tls && readTls(options.tls)
  baton.keeper.secretOwners = true
  const hub = new EventHub(baton.store, options.eventRing ?? DEFAULT_EVENT_RING)
  const desk = new LeaseDesk(baton.driver, hub, baton.keeper.clientId, !options.privateStore)
  const limits = new WaitLimits(options.waitCaps ?? DEFAULT_WAIT_CAPS)
  const quotas = new Quotas({ ...DEFAULT_TENANT_QUOTAS, ...options.quotas })
  hub.ends((owner) => quotas.ended(owner))
  const streams = new Set<{ end(): void; buffered?(): number }>()
  const metrics = new Metrics(hub, {
    held: () => desk.size, waiting: () => limits.waiting, store: baton.store,
    streams: () => streams.size,
    streamBytes: () => {
      let bytes = 0
      for (const stream of streams) bytes += stream.buffered?.() ?? 0
      return bytes
    },
  })
  const caps = options.caps ?? DEFAULT_LEASE_CAPS
  const secrets = await leaseSecretOf(options, caps)
  const restartWaitMs = options.restartWaitMs ?? 0
  const ctx: ServerContext = {
    baton, hub, desk, metrics, limits, dataDir: options.dataDir, caps, quotas, defaultTtlMs: defaultTtlOf(caps), leaseIds: secrets.ids,
    eventBufferBytes: options.eventBufferBytes ?? 1024 * 1024,
    grantsFrom: restartWaitMs > 0 ? monotonicNow() + restartWaitMs : 0,
    waits: new Map(), requests: new Set(), waiting: new Set(), streams, shuttingDown: false,
    sessions: new SessionTable(desk, (ms) => options.dataDir?.noteLease(ms)), outcomes: new RequestWindow(),
    pollMaxMs: options.pollMaxMs ?? DEFAULT_POLL_MAX_MS,
  }

  const timeouts = { headersTimeout: options.headersTimeoutMs ?? 10_000, connectionsCheckingInterval: options.timeoutCheckMs ?? 1000 }
  const app = Fastify({
    // With TLS, fastify hands these options to https.createServer alone: the timeouts go there too.
    ...(tls ? { https: { ...tls, ...timeouts } } : {}),
    logger: false, // a request log could carry bearer tokens and lease ids
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    // Lease ids and percent-encoded 256-byte names are longer than find-my-way's default of 100.
    routerOptions: { maxParamLength: 4096 },
    // Router-level refusals (bad URL encoding, too long) answer in the API's error format too.
    frameworkErrors: (error, _request, reply) => sendError(reply, error),
    return503OnClosing: true,
    // Slow clients can not hold connections by sending their request slowly; the
    // answer itself has no deadline (a long-poll or an event stream may last).
    requestTimeout: options.requestTimeoutMs ?? 30_000,
    http: timeouts,
    rewriteUrl: slashNames,
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  })
  app.addSchema(errorSchema)
  for (const schema of componentSchemas) app.addSchema(schema)
  await app.register(swagger, openapiOptions(ctx.defaultTtlMs))
  app.server.maxConnections = options.maxConnections ?? 8192
  // Set when listening (the rules depend on the address bound); open probes are not checked.
  let guard: RequestGuard | undefined
  // null: open (no --tokens); accessOf() then answers OPEN.
  app.decorateRequest('access', null as never)

  // Hooks are added per route, each only where it does something: a global
  // hook runs (and reads the costly request.routeOptions) on every request.
  // Callback style: an async hook costs a promise per request on the hot path.
  app.addHook('onRoute', (route) => {
    const open = (route.config as { open?: boolean } | undefined)?.open === true
    if (route.url !== '/healthz' && route.url !== '/readyz') {
      route.onRequest = [...hooks(route.onRequest), (request, _reply, done) => {
        try {
          guard?.(request.headers.host, request.headers.origin)
        } catch (error) {
          return done(error as Error)
        }
        done()
      }]
    }
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
      // Every route that takes a ttl or lock delay is held to the caps (after the schema checked the body).
      route.preHandler = [(request, _reply, done) => {
        try {
          checkCaps(caps, request.body)
        } catch (error) {
          return done(error as Error)
        }
        done()
      }, ...hooks(route.preHandler)]
    }
    const integers = integerQueryFields(route.schema)
    if (integers.length > 0) route.preValidation = [coerceIntegerQuery(integers), ...hooks(route.preValidation)]
    const record = metrics.route(route.url)
    const acquire = methods.includes('POST') && (route.url.endsWith('/acquire') || route.url.endsWith('/campaign'))
    if (acquire || route.url === '/v1/events' || (route.config as { streams?: boolean } | undefined)?.streams === true) {
      // Streamed answers (hijacked) and long-polls the client left never reach onResponse:
      // counted when the connection's answer closes, 499 when the client left before any answer.
      route.onRequest = [(request, reply, done) => {
        const started = performance.now()
        reply.raw.once('close', () => {
          const res = reply.raw
          record(request.method, res.headersSent ? res.statusCode : 499, (performance.now() - started) / 1000)
        })
        done()
      }, ...hooks(route.onRequest)]
    } else {
      route.onResponse = [...hooks(route.onResponse), (request, reply, done) => {
        record(request.method, reply.statusCode, reply.elapsedTime / 1000)
        done()
      }]
    }
    if (acquire) {
      // Per-token quotas: waiting acquires while they wait, holds until they end (counted by the route's grant).
      route.preHandler = [...hooks(route.preHandler), (request, reply, done) => {
        try {
          const tenant = tenantOf(request)
          quotas.check(tenant, 'holds')
          if (waitOf(request.body) > 0) reply.raw.once('close', quotas.enter(tenant, 'waiters'))
        } catch (error) {
          return done(error as Error)
        }
        done()
      }]
    }
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

  // The embedded store with --data-dir: the restart mark follows the leases that can still be live.
  const driver = baton.driver as { latestEnd?: () => number }
  if (options.dataDir && typeof driver.latestEnd === 'function') options.dataDir.follow(() => driver.latestEnd!())

  lockRoutes(app, ctx)
  multiRoutes(app, ctx)
  sessionRoutes(app, ctx)
  opsRoutes(app, ctx)
  app.get('/openapi.json', { schema: { hide: true }, config: { open: true } }, async () => app.swagger())
  await app.ready()
  const certificates = options.tls && new CertificateReloader(options.tls, app.server as unknown as HttpsServer, options.log ?? console.log)
  const scheme = options.tls ? 'https' : 'http'

  return {
    app,
    reloadTls: certificates ? () => certificates.reload() : undefined,
    get leaseSecretSource() {
      return secrets.store && !secrets.store.shared ? 'process' as const : secrets.source
    },
    async listen(host, port) {
      guard = requestGuard(host, options.origins)
      const first = await app.listen({ host, port })
      // Fastify answers its first address (127.0.0.1 for 0.0.0.0): say what was bound instead.
      const bound = app.server.address()
      if (!bound || typeof bound === 'string') return first
      return `${scheme}://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`
    },
    async close() {
      ctx.shuttingDown = true
      certificates?.close()
      secrets.store?.close()
      for (const controller of ctx.waiting) controller.abort(new Error('the server is shutting down'))
      for (const stream of ctx.streams) stream.end()
      await app.close()
      metrics.close()
      desk.close()
      ctx.sessions.close()
      options.dataDir?.close()
      hub.close()
      await baton.close()
    },
  }
}
