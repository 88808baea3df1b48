/** The operations routes' schemas (ops.ts): events, history, info, metrics, health. */
import { MAX_NAME_BYTES } from '../internal-api.js'
import { component, errors, operations } from './schema-parts.js'

export const opsSchemas = operations({
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
