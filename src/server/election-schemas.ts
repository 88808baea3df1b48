/** The leader election routes' schemas (election-routes.ts). */
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'
import { component, duration, electionValue, errors, grant, nameParams, operations, released } from './schema-parts.js'

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
