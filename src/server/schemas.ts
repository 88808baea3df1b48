import { MAX_NAME_BYTES } from '../core/names.js'
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'

/**
 * Every route's body, params, querystring and replies, declared once: the
 * same objects validate requests (ajv, unknown fields refused) and produce
 * /openapi.json. Checks JSON Schema can not express (durations, names) are
 * the library's own, answered as 400 INVALID_ARGUMENT as well.
 *
 * Objects a client sees by name (Grant, Lock, Error…) are components: declare
 * one with component(), refer to it by what it returns, and the server adds
 * every one of them (componentSchemas) before its routes, so /openapi.json
 * names them under #/components/schemas instead of inlining or numbering them.
 */

/** Every named schema, in the order declared; the server addSchema()s them all. */
export const componentSchemas: { $id: string }[] = []

/** Declares a named component schema and returns a reference to it. */
export function component<S extends object>(id: string, schema: S): { $ref: `${string}#` } {
  componentSchemas.push({ $id: id, ...schema })
  return { $ref: `${id}#` }
}

const duration = {
  description: "milliseconds, or a string such as '250ms', '30s', '5m', '1h'",
  anyOf: [{ type: 'number' }, { type: 'string', maxLength: 32 }],
} as const

const errorReply = { $ref: 'Error#' } as const
/** The error answers an operation really gives, each in the Error schema (Retry-After is added to 429/503 for the document). */
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, errorReply]))

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: MAX_NAME_BYTES * 3, description: 'lock name, percent-encoded (it may contain "/")' } },
} as const

const leaseParams = {
  type: 'object',
  required: ['leaseId'],
  properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH, description: 'the leaseId of a Grant' } },
} as const

const mode = { type: 'string', enum: ['exclusive', 'read', 'write', 'permit'] } as const

/** A leader's announced value (the store keeps at most 4096 UTF-8 bytes: the route checks bytes). */
const electionValue = { type: 'string', maxLength: 4096, description: "leader election: the candidate's announced value, kept beside the hold (at most 4096 UTF-8 bytes)" } as const

const grant = component('Grant', {
  type: 'object',
  description: 'A lease granted (or renewed): its id, fencing token and end',
  required: ['leaseId', 'name', 'token', 'expiresAt', 'ttlMs', 'owner', 'mode'],
  additionalProperties: false,
  properties: {
    leaseId: { type: 'string', description: 'secret: extends and releases the lease on any server sharing the store' },
    name: { type: 'string' },
    token: { type: 'string', pattern: '^[0-9]+$', description: 'fencing token, a decimal string (it can pass 2^53): hand it to what the lock protects' },
    expiresAt: { type: 'integer', description: "epoch ms by the server's clock" },
    ttlMs: { type: 'integer', description: 'ms the lease has left' },
    owner: { type: 'string', description: 'digest of the secret owner, as inspect and events show it' },
    mode,
  },
})

const holder = component('Holder', {
  type: 'object',
  required: ['owner', 'token', 'mode', 'expiresAt'],
  additionalProperties: false,
  properties: {
    owner: { type: 'string', description: 'digest of the owner' },
    token: { type: 'string', pattern: '^[0-9]+$' },
    mode,
    weight: { type: 'integer', minimum: 1, description: 'for a semaphore permit: how many permits this hold takes' },
    expiresAt: { type: 'integer', description: "epoch ms by the store's clock" },
    description: { type: 'string', description: 'who took it: JSON text with host, pid, client, cmd' },
    since: { type: 'integer', description: "when the store granted it, epoch ms by the store's clock" },
    value: { type: 'string', description: "a leader's announced value (elections), when the hold carries one" },
  },
})

const waiter = component('Waiter', {
  type: 'object',
  required: ['owner', 'mode'],
  additionalProperties: false,
  properties: {
    owner: { type: 'string', description: 'digest of the owner' },
    mode,
    weight: { type: 'integer', minimum: 1, description: 'for a semaphore permit: how many permits this waiter asks for' },
    description: { type: 'string', description: 'who waits: JSON text with host, pid, client, cmd' },
    since: { type: 'integer', description: "when it joined the line, epoch ms by the store's clock" },
  },
})

const lock = component('Lock', {
  type: 'object',
  description: 'A lock in use: its holders, its waiting line and the last token granted',
  required: ['name', 'kind', 'fair', 'permits', 'holders', 'waiters', 'lastToken'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    kind: { type: 'string', enum: ['mutex', 'rwlock', 'semaphore'] },
    fair: { type: 'boolean' },
    permits: { type: 'integer' },
    holders: { type: 'array', items: holder },
    waiters: { type: 'array', items: waiter },
    lastToken: { type: 'string', pattern: '^[0-9]+$' },
  },
})

const released = component('Released', {
  type: 'object', required: ['released'], additionalProperties: false,
  properties: { released: { type: 'boolean', description: 'false if it was not held (releasing is idempotent)' } },
})

/**
 * The route schemas, by operation: each key becomes the operation's
 * operationId in /openapi.json (a generated client's method name), unless the
 * entry names one itself.
 */
function operations<T extends Record<string, object>>(table: T): { [K in keyof T]: T[K] & { operationId: string } } {
  return Object.fromEntries(Object.entries(table).map(([id, schema]) => [id, { operationId: id, ...schema }])) as never
}

export const schemas = operations({
  acquire: {
    summary: 'Acquire a lock; waits up to `wait` (long-poll) and answers the moment it is granted',
    description: 'With `Accept: application/x-ndjson` and a `wait`, the answer is streamed: `{"state":"waiting"}` once the request is in line, then one line with the Grant or the error.',
    tags: ['locks'],
    params: nameParams,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ttl: { ...duration, description: "lease length (default '30s'); the lease ends then unless extended" },
        wait: { ...duration, description: 'how long to wait for the lock (default 0: answer at once)' },
        mode: { ...mode, default: 'exclusive' },
        permits: { type: 'integer', minimum: 1, maximum: 1_000_000, description: "for mode 'permit': the semaphore's size" },
        weight: {
          type: 'integer', minimum: 1, maximum: 1_000_000,
          description: "for mode 'permit': how many of the permits this hold takes (default 1, at most `permits`); the line is served in order, so a heavy waiter at its head is never passed by lighter ones",
        },
        fair: { type: 'boolean', description: 'grant strictly in arrival order' },
        lockDelay: { ...duration, description: 'keep the name blocked this long after a hold expired' },
        waitId: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'secret chosen by the client: DELETE /v1/waits/{waitId} leaves the line' },
        requestId: {
          type: 'string', minLength: 22, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$',
          description: 'secret chosen by the client (at least 128 random bits): a retry of this acquire with the same requestId, sent to the same server, is answered the lease the first attempt got instead of a second one; after that lease ended (within 10 min), 410',
        },
        session: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: "a session of this server (POST /v1/sessions): its keepalives prove a waiting acquire's client alive; a waiter without one for its ttl leaves the line" },
        description: { type: 'string', maxLength: 1024, description: 'who asks, for operators (inspect, the dashboard); the store keeps at most 256 bytes of it' },
        value: electionValue,
      },
    },
    response: {
      200: grant,
      202: component('StillWaiting', {
        description: 'a plain JSON long-poll that reached the server\'s longest poll: send the same request again (same waitId) within 15 s to keep the place in line',
        type: 'object', required: ['state', 'waitId'], additionalProperties: false,
        properties: { state: { type: 'string', enum: ['waiting'] }, waitId: { type: 'string' } },
      }),
      ...errors(400, 401, 403, 404, 409, 410, 429, 503),
    },
  },
  extend: {
    summary: 'Renew a lease',
    tags: ['leases'],
    params: leaseParams,
    body: { type: 'object', additionalProperties: false, properties: { ttl: duration } },
    response: { 200: grant, ...errors(400, 401, 403, 404, 410, 503) },
  },
  extendMany: {
    summary: 'Renew many leases in one request',
    tags: ['leases'],
    body: {
      type: 'object',
      required: ['leases'],
      additionalProperties: false,
      properties: {
        leases: { type: 'array', maxItems: 10_000, items: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH } },
        ttl: duration,
        session: {
          type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$',
          description: "a session of this server: the leases renewed here join it, and its keepalives renew them from now on (to this ttl)",
        },
      },
    },
    response: {
      200: component('ExtendResults', {
        type: 'object',
        required: ['results'],
        additionalProperties: false,
        properties: {
          session: { type: 'boolean', description: 'whether the renewed leases joined the session sent' },
          results: {
            type: 'array',
            items: component('ExtendResult', {
              type: 'object',
              required: ['leaseId', 'status'],
              additionalProperties: false,
              properties: {
                leaseId: { type: 'string' },
                status: { type: 'string', enum: ['extended', 'lost', 'forbidden'], description: 'lost: gone from the store, or not a lease id of this store\'s servers (edited, forged); forbidden: the token may not lock its name, is over its hold quota here, or its lock delay is above --max-lock-delay now' },
                expiresAt: { type: 'integer' },
                ttlMs: { type: 'integer' },
              },
            }),
          },
        },
      }),
      ...errors(400, 401, 403, 503),
    },
  },
  downgrade: {
    summary: 'Turn a write lease into a read lease with the same token',
    tags: ['leases'],
    params: leaseParams,
    response: { 200: grant, ...errors(400, 401, 403, 404, 410, 503) },
  },
  release: {
    summary: 'Release a lease (idempotent: released false if it was not held)',
    tags: ['leases'],
    params: leaseParams,
    response: { 200: released, ...errors(400, 401, 403, 404, 503) },
  },
  cancelWait: {
    summary: 'Leave the line: ends the waiting acquire that sent this waitId',
    tags: ['locks'],
    params: { type: 'object', required: ['waitId'], properties: { waitId: { type: 'string', maxLength: 64 } } },
    response: { 204: { type: 'null', description: 'the waiting acquire was ended (it answers 409 ABORTED)' }, ...errors(400, 401, 403, 404) },
  },
  inspect: {
    summary: 'Who holds a lock, who waits, the last token',
    tags: ['locks'],
    params: nameParams,
    response: { 200: lock, ...errors(400, 401, 403, 404, 503) },
  },
  list: {
    summary: 'Locks in use, by name prefix, paged',
    tags: ['locks'],
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prefix: { type: 'string', maxLength: MAX_NAME_BYTES * 3 },
        limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'page size (default 100)' },
        cursor: { type: 'string', maxLength: 2048, description: 'nextCursor of the previous page' },
      },
    },
    response: {
      200: component('LockPage', {
        type: 'object',
        required: ['locks'],
        additionalProperties: false,
        properties: { locks: { type: 'array', items: lock }, nextCursor: { type: 'string', description: 'present when another page follows' } },
      }),
      ...errors(400, 401, 403, 503),
    },
  },
  forceRelease: {
    summary: "Admin: free a lock at once; holders' leases are lost",
    tags: ['locks'],
    params: nameParams,
    response: { 200: released, ...errors(400, 401, 403, 503) },
  },
  events: {
    summary: 'Server-sent events: grant, release, expire, lost (of leases this server granted), forced (every holder a release --force here took, with `by`: the admin token\'s name)',
    description: 'A lease this server granted is reported here wherever it ends: released through another server sharing the store, `release`; forced through another, `lost`; both when it happens, not at its lease end.',
    tags: ['events'],
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prefix: { type: 'string', maxLength: MAX_NAME_BYTES * 3 },
        types: { type: 'string', pattern: '^(grant|release|expire|lost|forced)(,(grant|release|expire|lost|forced))*$', description: 'comma-separated event types (default all)' },
      },
    },
    response: {
      200: {
        description: 'a text/event-stream: `event: <type>` and `data: <JSON>` per event, a comment line every 15 s',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      ...errors(400, 401, 403),
    },
  },
  history: {
    summary: "Grants per second over the last 5 minutes, from the server's own counters (the dashboard's chart)",
    tags: ['server'],
    response: {
      200: component('History', {
        type: 'object', required: ['seconds'], additionalProperties: false,
        properties: {
          seconds: {
            type: 'array',
            items: {
              type: 'object', required: ['at', 'grants', 'waitedMs'], additionalProperties: false,
              properties: { at: { type: 'integer', description: 'epoch ms' }, grants: { type: 'integer' }, waitedMs: { type: 'number' } },
            },
          },
        },
      }),
      ...errors(401, 403),
    },
  },
  info: {
    summary: 'The store behind this server and what it can do',
    tags: ['server'],
    response: {
      200: component('ServerInfo', {
        type: 'object',
        required: ['store', 'capabilities', 'version', 'defaultTtlMs', 'maxTtlMs', 'maxLockDelayMs'],
        additionalProperties: false,
        properties: {
          store: { type: 'string', description: 'the store URL, password masked' },
          defaultTtlMs: { type: 'integer', description: "the ttl of a grant or renewal that asks none: 30 s, or maxTtlMs when that is shorter" },
          maxTtlMs: { type: 'integer', description: 'the longest ttl a request may ask (--max-ttl)' },
          maxLockDelayMs: { type: 'integer', description: 'the longest lock delay a request may ask (--max-lock-delay)' },
          version: { type: 'string' },
          capabilities: {
            type: 'object',
            additionalProperties: false,
            properties: {
              fair: { type: 'boolean' }, rwlock: { type: 'boolean' }, semaphore: { type: 'boolean' },
              lockDelay: { type: 'boolean' }, handoff: { type: 'boolean' }, durableTokens: { type: 'boolean' },
            },
          },
        },
      }),
      ...errors(401),
    },
  },
  metrics: {
    summary: 'Prometheus metrics',
    tags: ['server'],
    response: {
      200: { description: 'the Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
      ...errors(401, 403),
    },
  },
  health: {
    summary: 'The process is up',
    tags: ['server'],
    response: { 200: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } } },
  },
  ready: {
    summary: 'The store answers and any restart delay has passed',
    tags: ['server'],
    response: {
      200: { type: 'object', required: ['ready'], properties: { ready: { type: 'boolean' }, store: { type: 'string' } } },
      503: component('NotReady', {
        type: 'object', required: ['ready', 'reason'],
        properties: { ready: { type: 'boolean' }, reason: { type: 'string' }, retryAfterMs: { type: 'integer' } },
      }),
    },
  },
})

/**
 * Query strings arrive as text and the server's ajv does not coerce types
 * (a body's "true" must stay a string error), so a route whose querystring
 * declares integers gets this hook: whole-number strings of those fields
 * become numbers before validation; anything else fails it as usual.
 */
export function integerQueryFields(schema: unknown): string[] {
  const properties = (schema as { querystring?: { properties?: Record<string, { type?: string }> } } | undefined)?.querystring?.properties ?? {}
  return Object.entries(properties).filter(([, p]) => p.type === 'integer').map(([name]) => name)
}

export function coerceIntegerQuery(fields: string[]) {
  return (request: { query: unknown }, _reply: unknown, done: () => void) => {
    const query = request.query as Record<string, unknown>
    for (const field of fields) {
      const value = query[field]
      if (typeof value === 'string' && /^-?[0-9]{1,15}$/.test(value)) query[field] = Number(value)
    }
    done()
  }
}

const sessionId = { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'secret: renews and ends the session' } as const
const sessionParams = { type: 'object', required: ['sessionId'], properties: { sessionId: sessionId } } as const
const giveUp = {
  type: 'array', maxItems: 10_000, items: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH },
  description: 'lease ids of the session its client no longer counts on (it took them for lost): released instead of renewed',
} as const

/** Named response schemas of the session and body-form lease routes, registered once (`Session#`, `Keepalive#`). */
const sessionView = component('Session', {
  type: 'object',
  required: ['sessionId', 'ttlMs', 'expiresAt'],
  additionalProperties: false,
  properties: {
    sessionId,
    ttlMs: { type: 'integer', description: 'idle time after which the session ends once none of its leases can still be held' },
    expiresAt: { type: 'integer', description: "epoch ms by the server's clock, unless kept alive" },
  },
})

const keepaliveView = component('Keepalive', {
  type: 'object',
  required: ['sessionId', 'ttlMs', 'leases', 'lost', 'expiresAt'],
  additionalProperties: false,
  properties: {
    sessionId: { type: 'string' },
    ttlMs: { type: 'integer', description: 'the shortest lease the store set in this renewal, counted from when the keepalive arrived' },
    leases: { type: 'integer', description: 'leases the session renews' },
    lost: { type: 'array', items: { type: 'string' }, description: 'owner digests of its leases the store no longer has' },
    expiresAt: { type: 'integer', description: "epoch ms by the server's clock, unless kept alive" },
  },
})

const leaseInBody = {
  type: 'object',
  additionalProperties: false,
  properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH, description: 'or in the Baton-Lease-Id header' } },
} as const

export const sessionSchemas = operations({
  create: {
    operationId: 'createSession',
    summary: 'Open a session: leases acquired with its id are renewed together by one keepalive',
    tags: ['sessions'],
    body: { type: 'object', additionalProperties: false, properties: { ttl: { ...duration, description: "idle time before the session ends (default '60s', at most '1h')" } } },
    response: { 201: sessionView, ...errors(400, 401, 403, 429, 503) },
  },
  keepalive: {
    operationId: 'keepaliveSession',
    summary: "Renew every lease of a session (one request whatever their count) and prove its waiting acquires' client alive",
    tags: ['sessions'],
    params: sessionParams,
    body: { type: 'object', additionalProperties: false, properties: { giveUp } },
    response: { 200: keepaliveView, ...errors(400, 401, 404, 503) },
  },
  keepaliveInBody: {
    operationId: 'keepaliveSessionInBody',
    summary: 'Keepalive with the session id in the body (proxies log paths)',
    tags: ['sessions'],
    body: { type: 'object', required: ['sessionId'], additionalProperties: false, properties: { sessionId, giveUp } },
    response: { 200: keepaliveView, ...errors(400, 401, 404, 503) },
  },
  end: {
    operationId: 'endSession',
    summary: 'End a session: releases its leases, its waiting acquires leave the line',
    tags: ['sessions'],
    params: sessionParams,
    response: { 200: released, ...errors(401, 404, 503) },
  },
  releaseInBody: {
    operationId: 'releaseLeaseInBody',
    summary: 'Release a lease named in the body or the Baton-Lease-Id header (proxies log paths, and lease ids are credentials)',
    tags: ['leases'],
    body: leaseInBody,
    response: { 200: released, ...errors(400, 401, 403, 404, 503) },
  },
  releaseInHeader: {
    operationId: 'releaseLeaseInHeader',
    summary: 'Release the lease named in the Baton-Lease-Id header',
    tags: ['leases'],
    response: { 200: released, ...errors(400, 401, 403, 404, 503) },
  },
  downgradeInBody: {
    operationId: 'downgradeLeaseInBody',
    summary: 'Downgrade a write lease named in the body or the Baton-Lease-Id header',
    tags: ['leases'],
    body: leaseInBody,
    response: { 200: grant, ...errors(400, 401, 403, 404, 410, 503) },
  },
})


/** Several locks in one request, all or none (docs/multi-lock.md). */
export const multiSchemas = operations({
  acquireMulti: {
    summary: 'Acquire several locks at once, all or none: waits up to `wait` (long-poll) and answers one Grant per name',
    description: 'The names are taken in one global order (byte order), so two requests with overlapping sets never deadlock; ' +
      'what was taken is renewed while the rest is awaited, and released if the whole set can not be had. ' +
      'With `Accept: application/x-ndjson` and a `wait`, the answer is streamed: `{"state":"waiting"}` lines, then one line with the answer or the error. ' +
      "A plain JSON request waits at most the server's longest poll, then answers 409 LOCK_TIMEOUT holding nothing: ask again.",
    tags: ['locks'],
    body: {
      type: 'object',
      required: ['locks'],
      additionalProperties: false,
      properties: {
        locks: {
          type: 'array', minItems: 1, maxItems: 64, description: 'the names, each exclusive or one side of a read-write lock',
          items: {
            type: 'object', required: ['name'], additionalProperties: false,
            properties: {
              name: { type: 'string', minLength: 1, maxLength: MAX_NAME_BYTES * 3 },
              mode: { type: 'string', enum: ['exclusive', 'read', 'write'], default: 'exclusive' },
            },
          },
        },
        ttl: { ...duration, description: "lease length of every part (default '30s'); each lease ends then unless extended" },
        wait: { ...duration, description: 'how long to wait for the whole set (default 0: answer at once)' },
        fair: { type: 'boolean', description: 'grant each name strictly in arrival order' },
        lockDelay: { ...duration, description: 'keep a name blocked this long after its hold expired' },
        description: { type: 'string', maxLength: 1024, description: 'who asks, for operators (inspect, the dashboard); the store keeps at most 256 bytes of it' },
      },
    },
    response: {
      200: component('MultiGrant', {
        type: 'object',
        description: 'Every lease of the set, in the order they were taken (byte order of the names): extend and release each by its leaseId, or all with POST /v1/multi/release',
        required: ['leases'],
        additionalProperties: false,
        properties: { leases: { type: 'array', items: grant } },
      }),
      ...errors(400, 401, 403, 409, 410, 429, 503),
    },
  },
  releaseMulti: {
    summary: 'Release several leases (a set from POST /v1/multi/acquire) in one request',
    tags: ['leases'],
    body: {
      type: 'object', required: ['leases'], additionalProperties: false,
      properties: { leases: { type: 'array', minItems: 1, maxItems: 64, items: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH } } },
    },
    response: {
      200: component('MultiReleased', {
        type: 'object', required: ['released'], additionalProperties: false,
        properties: { released: { type: 'array', items: { type: 'boolean' }, description: 'per lease, in the order sent: false if it was not held' } },
      }),
      ...errors(400, 401, 403, 404, 503),
    },
  },
})

/** Leader election (src/server/election-routes.ts): a fair mutex whose holds carry a value. */
export const electionSchemas = operations({
  campaign: {
    summary: 'Campaign for leadership: a fair exclusive acquire with a value; waits up to `wait` (long-poll, streamed like acquire) and answers the moment this candidate leads',
    tags: ['elections'],
    params: nameParams,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        value: electionValue,
        ttl: { ...duration, description: "the leader's lease (default '30s'): a leader that stops renewing is replaced within it" },
        wait: { ...duration, description: 'how long to campaign (default 0: lead now or answer 409 LOCK_TIMEOUT)' },
        lockDelay: { ...duration, description: "keep the leadership vacant this long after a leader's lease expired" },
        waitId: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'as for acquire' },
        requestId: { type: 'string', minLength: 22, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'as for acquire' },
        session: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'as for acquire' },
        description: { type: 'string', maxLength: 1024, description: 'who campaigns, for operators' },
      },
    },
    response: { 200: grant, 202: { $ref: 'StillWaiting#' }, ...errors(400, 401, 403, 404, 409, 410, 429, 503) },
  },
  leader: {
    summary: 'Who leads now: its value, fencing token and since when; leader null while nobody does',
    tags: ['elections'],
    params: nameParams,
    response: {
      200: component('LeaderAnswer', {
        type: 'object', required: ['leader'], additionalProperties: false,
        properties: {
          leader: {
            anyOf: [{ type: 'null' }, {
              type: 'object', required: ['value', 'token', 'owner', 'expiresAt'], additionalProperties: false,
              properties: {
                value: { type: 'string' },
                token: { type: 'string', pattern: '^[0-9]+$', description: 'fencing token of the term' },
                owner: { type: 'string', description: 'digest of the owner' },
                expiresAt: { type: 'integer', description: "epoch ms by the store's clock" },
                since: { type: 'integer', description: "when the term began, epoch ms by the store's clock" },
                description: { type: 'string', description: 'who leads: JSON text with host, pid, client' },
              },
            }],
          },
        },
      }),
      ...errors(400, 401, 403, 503),
    },
  },
  proclaim: {
    summary: "Change the leader's announced value without giving up the term (same lease, same token); 410 if the leadership is gone",
    tags: ['elections'],
    params: nameParams,
    body: {
      type: 'object', required: ['value'], additionalProperties: false,
      properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH, description: "the campaign's leaseId, or in the Baton-Lease-Id header" }, value: electionValue },
    },
    response: {
      200: component('Proclaimed', { type: 'object', required: ['proclaimed'], additionalProperties: false, properties: { proclaimed: { type: 'boolean' } } }),
      ...errors(400, 401, 403, 404, 410, 503),
    },
  },
  resign: {
    summary: 'Give up the leadership: the next candidate in campaign order leads at once (idempotent)',
    tags: ['elections'],
    params: nameParams,
    body: {
      type: 'object', additionalProperties: false,
      properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH, description: "the campaign's leaseId, or in the Baton-Lease-Id header" } },
    },
    response: { 200: released, ...errors(400, 401, 403, 404, 503) },
  },
  leaderEvents: {
    summary: 'Server-sent events of one election: `event: leader` with `{"leader": {value, token} | null}`, first the current leader, then every change in order',
    tags: ['elections', 'events'],
    params: nameParams,
    response: {
      200: {
        description: 'a text/event-stream: `event: leader` and `data: <JSON>` per change, a comment line every 15 s',
        content: { 'text/event-stream': { schema: { type: 'string' } } },
      },
      ...errors(400, 401, 403),
    },
  },
})
