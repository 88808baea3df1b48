/**
 * `baton serve` traces its requests when the operator configures the
 * standard OpenTelemetry variables (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp): a server
 * span per request, a child of the client's span when it sends a W3C
 * `traceparent`, with the lock spans of baton/otel under it, exported over
 * OTLP/HTTP (JSON). Without them nothing is loaded: the SDK packages are
 * imported only here, only then.
 *
 * Lock names and lease ids never reach a span unless BATON_OTEL_LOCK_NAMES
 * allows names: `url.path` carries `{name}`, `{id}` … in their place.
 */
import type * as Otel from '@opentelemetry/api'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { BatonError } from '../index.js'
import { instrument } from '../otel/index.js'

type Env = Record<string, string | undefined>

/** The SDK packages the server loads when tracing is configured (devDependencies here; bundled in dist/cli). */
export const TRACING_PACKAGES = [
  '@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources', '@opentelemetry/core', '@opentelemetry/context-async-hooks',
] as const

/** Path parameters whose values are lock names (shown in `url.path` only when names are allowed). */
const NAME_PARAMS = new Set(['name', 'names'])

export interface RequestTracing {
  /** What the start-up line says. */
  readonly describe: string
  /** Hooks for one route: `onRequest` starts its span, `preHandler` runs the handler inside it. */
  forRoute(route: string): {
    onRequest(request: FastifyRequest, reply: FastifyReply, done: () => void): void
    preHandler(request: FastifyRequest, reply: FastifyReply, done: () => void): void
  }
  /** Exports what is left and stops. */
  shutdown(): Promise<void>
}

/** True when the variables ask for traces (and OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none do not forbid them). */
export function tracingConfigured(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((item) => item.trim().toLowerCase()).filter(Boolean)
  if (exporters.includes('none')) return false
  const unsupported = exporters.filter((item) => item !== 'otlp')
  if (unsupported.length > 0) {
    throw new BatonError('INVALID_ARGUMENT', `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: baton serve exports traces over OTLP only ("otlp", or "none")`)
  }
  for (const variable of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const protocol = env[variable]?.trim()
    if (!protocol) continue
    if (protocol !== 'http/json') throw new BatonError('INVALID_ARGUMENT', `${variable}=${protocol}: baton serve exports traces as OTLP/HTTP JSON only (http/json)`)
    break
  }
  return exporters.length > 0 || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim())
}

/** Loads the SDK, or says which packages are missing. */
async function loadSdk() {
  try {
    const [api, traces, exporter, resources, core, contexts] = await Promise.all([
      import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base'), import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'), import('@opentelemetry/core'), import('@opentelemetry/context-async-hooks'),
    ])
    return { api, traces, exporter, resources, core, contexts }
  } catch (cause) {
    throw new BatonError('INVALID_ARGUMENT', `OTEL_* variables ask baton serve for traces, which needs the packages ${TRACING_PACKAGES.join(', ')}: ` +
      `npm install ${TRACING_PACKAGES.join(' ')} (the bundled \`baton\` command carries them), or unset the OTEL_* variables`, { cause })
  }
}

/**
 * Request tracing as the variables say, or undefined (nothing loaded) when
 * they ask for none. Registers the SDK as this process's OpenTelemetry.
 */
export async function tracingFromEnv(env: Env): Promise<RequestTracing | undefined> {
  if (!tracingConfigured(env)) return undefined
  const { api, traces, exporter, resources, core, contexts } = await loadSdk()
  // Export failures (collector down, refused) go to stderr; OTEL_LOG_LEVEL sets how much more.
  const level = env.OTEL_LOG_LEVEL?.trim().toUpperCase() as keyof typeof api.DiagLogLevel | undefined
  api.diag.setLogger(new api.DiagConsoleLogger(), level && level in api.DiagLogLevel ? api.DiagLogLevel[level] : api.DiagLogLevel.WARN)
  const lockNames = ['1', 'true', 'yes'].includes(env.BATON_OTEL_LOCK_NAMES?.trim().toLowerCase() ?? '')
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the default name.
  const resource = resources.defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'baton' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  // The exporter reads the endpoint, headers, timeout and compression variables itself.
  const provider = new traces.BasicTracerProvider({ resource, spanProcessors: [new traces.BatchSpanProcessor(new exporter.OTLPTraceExporter())] })
  api.context.setGlobalContextManager(new contexts.AsyncLocalStorageContextManager().enable())
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator())
  api.trace.setGlobalTracerProvider(provider)
  const stopLockSpans = await instrument({ api, lockNames })
  const tracer = api.trace.getTracer('baton-server', '0.1.0')
  const spans = new WeakMap<FastifyRequest, Otel.Context>()
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || `${(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || 'http://localhost:4318').replace(/\/$/, '')}/v1/traces`

  return {
    describe: `traces over OTLP/HTTP to ${endpoint}${lockNames ? ' (lock names included)' : ''}`,
    forRoute(route) {
      const template = route.split('/')
      return {
        onRequest(request, reply, done) {
          const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers)
          const span = tracer.startSpan(`${request.method} ${route}`, {
            kind: api.SpanKind.SERVER,
            attributes: {
              'http.request.method': request.method,
              'http.route': route,
              'url.path': pathOf(template, request.params as Record<string, string> | undefined, lockNames),
              'url.scheme': request.protocol,
            },
          }, parent)
          spans.set(request, api.trace.setSpan(parent, span))
          // 'close' comes for every answer, streamed and hijacked ones included, and when the client left first.
          reply.raw.once('close', () => {
            const res = reply.raw
            if (res.headersSent) {
              span.setAttribute('http.response.status_code', res.statusCode)
              if (res.statusCode >= 500) {
                span.setAttribute('error.type', String(res.statusCode))
                span.setStatus({ code: api.SpanStatusCode.ERROR })
              }
            } else {
              span.setAttribute('error.type', 'client_closed')
            }
            span.end()
          })
          done()
        },
        preHandler(request, _reply, done) {
          // Last of the route's hooks: the handler runs (and awaits) inside the request's span.
          const context = spans.get(request)
          if (context) api.context.with(context, done)
          else done()
        },
      }
    },
    async shutdown() {
      stopLockSpans()
      await provider.shutdown().catch(() => {})
    },
  }
}

/** The request path with each parameter shown as `{param}`, lock names as sent when allowed. */
function pathOf(template: readonly string[], params: Record<string, string> | undefined, lockNames: boolean): string {
  return template.map((segment) => {
    if (!segment.startsWith(':') && segment !== '*') return segment
    const param = segment === '*' ? '*' : segment.slice(1)
    const value = params?.[param]
    return lockNames && NAME_PARAMS.has(param) && value !== undefined ? encodeURIComponent(value) : `{${param}}`
  }).join('/')
}
