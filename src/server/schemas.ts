import { MAX_NAME_BYTES } from '../core/names.js'
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'

/**
 * Every route's body, params, querystring and replies, declared once: the
 * same objects validate requests (ajv, unknown fields refused) and produce
 * /openapi.json. Checks JSON Schema can not express (durations, names) are
 * the library's own, answered as 400 INVALID_ARGUMENT as well.
 */

const duration = {
  description: "milliseconds, or a string such as '250ms', '30s', '5m', '1h'",
  anyOf: [{ type: 'number' }, { type: 'string', maxLength: 32 }],
} as const

const errorReply = { $ref: 'Error#' } as const
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, errorReply]))

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: MAX_NAME_BYTES * 3, description: 'lock name, percent-encoded (it may contain "/")' } },
} as const

const leaseParams = {
  type: 'object',
  required: ['leaseId'],
  properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH } },
} as const

const grant = {
  type: 'object',
  required: ['leaseId', 'name', 'token', 'expiresAt', 'ttlMs', 'owner', 'mode'],
  additionalProperties: false,
  properties: {
    leaseId: { type: 'string', description: 'secret: extends and releases the lease on any server sharing the store' },
    name: { type: 'string' },
    token: { type: 'string', description: 'fencing token, a decimal string (it can pass 2^53)' },
    expiresAt: { type: 'number', description: "epoch ms by the server's clock" },
    ttlMs: { type: 'integer' },
    owner: { type: 'string', description: 'digest of the secret owner, as inspect and events show it' },
    mode: { type: 'string', enum: ['exclusive', 'read', 'write', 'permit'] },
  },
} as const

const holder = {
  type: 'object',
  required: ['owner', 'token', 'mode', 'expiresAt'],
  additionalProperties: false,
  properties: {
    owner: { type: 'string', description: 'digest of the owner' },
    token: { type: 'string' },
    mode: { type: 'string' },
    expiresAt: { type: 'number' },
  },
} as const

export const lockView = {
  $id: 'Lock',
  type: 'object',
  required: ['name', 'kind', 'fair', 'permits', 'holders', 'waiters', 'lastToken'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    kind: { type: 'string', enum: ['mutex', 'rwlock', 'semaphore'] },
    fair: { type: 'boolean' },
    permits: { type: 'integer' },
    holders: { type: 'array', items: holder },
    waiters: {
      type: 'array',
      items: { type: 'object', required: ['owner', 'mode'], additionalProperties: false, properties: { owner: { type: 'string' }, mode: { type: 'string' } } },
    },
    lastToken: { type: 'string' },
  },
} as const

const released = {
  type: 'object', required: ['released'], additionalProperties: false, properties: { released: { type: 'boolean' } },
} as const

export const schemas = {
  acquire: {
    summary: 'Acquire a lock; waits up to `wait` (long-poll) and answers the moment it is granted',
    tags: ['locks'],
    params: nameParams,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ttl: { ...duration, description: "lease length (default '30s'); the lease ends then unless extended" },
        wait: { ...duration, description: 'how long to wait for the lock (default 0: answer at once)' },
        mode: { type: 'string', enum: ['exclusive', 'read', 'write', 'permit'], default: 'exclusive' },
        permits: { type: 'integer', minimum: 1, maximum: 1_000_000, description: "for mode 'permit': the semaphore's size" },
        fair: { type: 'boolean', description: 'grant strictly in arrival order' },
        lockDelay: { ...duration, description: 'keep the name blocked this long after a hold expired' },
        waitId: { type: 'string', minLength: 16, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'secret chosen by the client: DELETE /v1/waits/{waitId} leaves the line' },
        requestId: {
          type: 'string', minLength: 22, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$',
          description: 'secret chosen by the client (at least 128 random bits): a retry of this acquire with the same requestId, sent to the same server, is answered the lease the first attempt got instead of a second one',
        },
      },
    },
    response: { 200: grant, ...errors(400, 401, 403, 409, 429, 503) },
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
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['results'],
        additionalProperties: false,
        properties: {
          results: {
            type: 'array',
            items: {
              type: 'object',
              required: ['leaseId', 'status'],
              additionalProperties: false,
              properties: {
                leaseId: { type: 'string' },
                status: { type: 'string', enum: ['extended', 'lost', 'forbidden'] },
                expiresAt: { type: 'number' },
                ttlMs: { type: 'integer' },
              },
            },
          },
        },
      },
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
    response: { 200: released, ...errors(401, 403, 404, 503) },
  },
  cancelWait: {
    summary: 'Leave the line: ends the waiting acquire that sent this waitId',
    tags: ['locks'],
    params: { type: 'object', required: ['waitId'], properties: { waitId: { type: 'string', maxLength: 64 } } },
    response: { 204: { type: 'null' }, ...errors(401, 404) },
  },
  inspect: {
    summary: 'Who holds a lock, who waits, the last token',
    tags: ['locks'],
    params: nameParams,
    response: { 200: { $ref: 'Lock#' }, ...errors(400, 401, 403, 404, 503) },
  },
  list: {
    summary: 'Locks in use, by name prefix, paged',
    tags: ['locks'],
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prefix: { type: 'string', maxLength: MAX_NAME_BYTES * 3 },
        limit: { type: 'string', pattern: '^[0-9]{1,4}$', description: 'page size, 1-1000 (default 100)' },
        cursor: { type: 'string', maxLength: 2048, description: 'nextCursor of the previous page' },
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['locks'],
        additionalProperties: false,
        properties: { locks: { type: 'array', items: { $ref: 'Lock#' } }, nextCursor: { type: 'string' } },
      },
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
    summary: 'Server-sent events: grant, release, expire, lost (of leases this server granted)',
    tags: ['events'],
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prefix: { type: 'string', maxLength: MAX_NAME_BYTES * 3 },
        types: { type: 'string', pattern: '^(grant|release|expire|lost)(,(grant|release|expire|lost))*$' },
      },
    },
  },
  info: {
    summary: "The store behind this server and what it can do",
    tags: ['server'],
    response: {
      200: {
        type: 'object',
        required: ['store', 'capabilities', 'version'],
        additionalProperties: false,
        properties: {
          store: { type: 'string' },
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
      },
      ...errors(401),
    },
  },
  health: {
    summary: 'The process is up',
    tags: ['server'],
    response: { 200: { type: 'object', properties: { ok: { type: 'boolean' } } } },
  },
  ready: {
    summary: 'The store answers and any restart delay has passed',
    tags: ['server'],
    response: {
      200: { type: 'object', properties: { ready: { type: 'boolean' }, store: { type: 'string' } } },
      503: { type: 'object', properties: { ready: { type: 'boolean' }, reason: { type: 'string' }, retryAfterMs: { type: 'integer' } } },
    },
  },
} as const
