import type { SwaggerOptions } from '@fastify/swagger'

/**
 * How /openapi.json is made fit for code generators, for every route at once
 * (routes declare only their schemas, in schemas.ts):
 *
 * - components are named by their $id (Grant, Lock, Error…), not def-0;
 * - every operation has an operationId (its key in schemas.ts, else one made
 *   from method and path) and at least one 4XX answer;
 * - routes not marked `config: { open: true }` require the bearer token and
 *   declare 401; open ones (health, readiness) declare no security;
 * - operations with a body can answer 413 and 415, with a path parameter
 *   414 (the router's limit); every error answer is the
 *   Error schema, and 429/503 declare Retry-After;
 * - a server entry (relative: the server that served the document) and a license.
 *
 * The document is the same whether or not the server runs with --tokens, so a
 * client generated once works against both: a server without tokens ignores
 * the Authorization header.
 */

const VERSION = '0.1.0'

type Json = Record<string, unknown>
type Operation = {
  operationId?: string
  security?: unknown[]
  requestBody?: unknown
  responses?: Record<string, Json>
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const

const ERROR_REF = { $ref: '#/components/schemas/Error' }

const STATUS_TEXT: Record<string, string> = {
  400: 'bad request (INVALID_ARGUMENT)',
  401: 'no token, or not a token of this server (UNAUTHORIZED)',
  403: 'the token lacks the right for this name (FORBIDDEN)',
  404: 'no such lock, lease or wait (NOT_FOUND)',
  409: 'held by someone else (LOCK_TIMEOUT), or the wait was ended (ABORTED)',
  410: 'the lease is gone: expired, released or taken by force (LEASE_LOST)',
  413: 'the request body is too large (INVALID_ARGUMENT)',
  414: 'a path parameter is longer than the server reads (INVALID_ARGUMENT)',
  415: 'the body is not application/json (INVALID_ARGUMENT)',
  429: 'too many waiting requests or sessions on this server (TOO_MANY_WAITERS), or the token used up its quota (QUOTA_EXCEEDED); retry after Retry-After',
  503: 'the store did not answer, or the server is shutting down (BACKEND_UNAVAILABLE, QUORUM_NOT_REACHED, CLOSED, ABORTED); retry after Retry-After',
}

const RETRY_AFTER = {
  'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
}

/** `get /v1/locks/{name}` → `getV1LocksName`: only for routes that name no operation themselves. */
function operationIdOf(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean)
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')
}

function errorResponse(status: string, existing: Json | undefined): Json {
  const content = (existing?.content ?? {}) as Record<string, { schema?: Json }>
  const json = content['application/json']?.schema
  const isError = !json || (json as { $ref?: string }).$ref === ERROR_REF.$ref
  return {
    ...(existing ?? {}),
    description: isError ? STATUS_TEXT[status] ?? (existing?.description as string | undefined) ?? 'error' : existing?.description ?? 'error',
    ...(isError ? { content: { 'application/json': { schema: ERROR_REF } } } : {}),
    ...(status === '429' || status === '503' ? { headers: { ...((existing?.headers ?? {}) as Json), ...RETRY_AFTER } } : {}),
  }
}

function completeOperation(method: string, path: string, operation: Operation): void {
  operation.operationId ??= operationIdOf(method, path)
  const responses = (operation.responses ??= {})
  const secured = operation.security === undefined || operation.security.length > 0
  if (secured && !responses['401']) responses['401'] = {}
  // The router refuses over-long path parameters before any schema runs.
  if (path.includes('{')) responses['414'] ??= {}
  if (operation.requestBody) {
    responses['413'] ??= {}
    responses['415'] ??= {}
  }
  for (const status of Object.keys(responses)) {
    if (/^(4|5)\d\d$/.test(status)) responses[status] = errorResponse(status, responses[status])
  }
  if (!Object.keys(responses).some((s) => s.startsWith('4'))) {
    // Open routes have no client error of their own; a request the server
    // can not read (a malformed URL) is still answered in the Error format.
    responses['4XX'] = { description: 'a request the server could not read', content: { 'application/json': { schema: ERROR_REF } } }
  }
}

/** The schemas say the stock default ttl; the document says this server's (clamped to --max-ttl). */
function withDefaultTtl(value: unknown, ttl: string): unknown {
  if (typeof value === 'string') return value.replaceAll("(default '30s')", `(default '${ttl}' on this server)`)
  if (Array.isArray(value)) return value.map((item) => withDefaultTtl(item, ttl))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withDefaultTtl(v, ttl)]))
  return value
}

/** `defaultTtlMs`: the ttl of a grant that asks none, on this server. */
export function openapiOptions(defaultTtlMs = 30_000): SwaggerOptions {
  const ttl = defaultTtlMs % 1000 === 0 ? `${defaultTtlMs / 1000}s` : `${defaultTtlMs}ms`
  return {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'baton lock server',
        version: VERSION,
        description: 'Distributed locks over HTTP: mutex, fair mutex, read-write lock, semaphore. Every grant carries a fencing token; a lease ends at its ttl unless extended.',
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
      },
      servers: [{ url: '/', description: 'the server that served this document (baton serve listens on http://127.0.0.1:7420 by default)' }],
      tags: [
        { name: 'locks', description: 'acquire, inspect, list and force-release locks' },
        { name: 'leases', description: 'extend, downgrade and release what was granted' },
        { name: 'events', description: 'a live stream of grants, releases, expiries and losses' },
        { name: 'server', description: 'health, readiness, metrics and what the server runs on' },
      ],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'a token from the server\'s --tokens file; a server started without --tokens ignores it',
          },
        },
      },
    },
    refResolver: {
      // Components are named by their $id, so generated types are Grant, Lock, Error.
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transform: ({ schema, url, route }) => {
      if (!schema) return { schema, url }
      const open = (route.config as { open?: boolean } | undefined)?.open === true
      return { schema: { ...schema, security: open ? [] : [{ bearer: [] }] } as typeof schema, url }
    },
    transformObject: (documentObject) => {
      const document = (documentObject as { openapiObject: Partial<Json> }).openapiObject as Json
      for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Record<string, Operation>>)) {
        for (const method of METHODS) {
          if (item[method]) completeOperation(method, path, item[method]!)
        }
      }
      return (ttl === '30s' ? document : withDefaultTtl(document, ttl)) as never
    },
  }
}
