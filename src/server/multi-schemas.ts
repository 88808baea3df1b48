/** The multi-lock routes' schemas (multi-routes.ts). */
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'
import { MAX_NAME_BYTES } from '../internal-api.js'
import { component, duration, errors, grant, operations } from './schema-parts.js'

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
