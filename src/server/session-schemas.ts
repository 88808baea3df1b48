/** The session routes' schemas and the body and header forms of the lease routes (session-routes.ts, lease-routes.ts). */
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'
import { component, duration, errors, grant, operations, released } from './schema-parts.js'

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
