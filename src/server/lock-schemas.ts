/** The lock and lease routes' schemas (routes.ts, lease-routes.ts, lock-view-routes.ts). */
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'
import { MAX_NAME_BYTES } from '../internal-api.js'
import { component, duration, electionValue, errors, grant, leaseParams, lock, mode, nameParams, operations, released } from './schema-parts.js'

export const lockSchemas = operations({
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
})
