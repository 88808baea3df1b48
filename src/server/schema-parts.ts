import { MAX_NAME_BYTES } from '../internal-api.js'
import { MAX_LEASE_ID_LENGTH } from './lease-id.js'

/**
 * The parts every route family's schemas share (schemas.ts lists the
 * families). Every route's body, params, querystring and replies, declared once: the
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

export const duration = {
  description: "milliseconds, or a string such as '250ms', '30s', '5m', '1h'",
  anyOf: [{ type: 'number' }, { type: 'string', maxLength: 32 }],
} as const

export const errorReply = { $ref: 'Error#' } as const
/** The error answers an operation really gives, each in the Error schema (Retry-After is added to 429/503 for the document). */
export const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, errorReply]))

export const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: MAX_NAME_BYTES * 3, description: 'lock name, percent-encoded (it may contain "/")' } },
} as const

export const leaseParams = {
  type: 'object',
  required: ['leaseId'],
  properties: { leaseId: { type: 'string', minLength: 1, maxLength: MAX_LEASE_ID_LENGTH, description: 'the leaseId of a Grant' } },
} as const

export const mode = { type: 'string', enum: ['exclusive', 'read', 'write', 'permit'] } as const

/** A leader's announced value (the store keeps at most 4096 UTF-8 bytes: the route checks bytes). */
export const electionValue = { type: 'string', maxLength: 4096, description: "leader election: the candidate's announced value, kept beside the hold (at most 4096 UTF-8 bytes)" } as const

export const grant = component('Grant', {
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

export const holder = component('Holder', {
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

export const waiter = component('Waiter', {
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

export const lock = component('Lock', {
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

export const released = component('Released', {
  type: 'object', required: ['released'], additionalProperties: false,
  properties: { released: { type: 'boolean', description: 'false if it was not held (releasing is idempotent)' } },
})

/**
 * The route schemas, by operation: each key becomes the operation's
 * operationId in /openapi.json (a generated client's method name), unless the
 * entry names one itself.
 */
export function operations<T extends Record<string, object>>(table: T): { [K in keyof T]: T[K] & { operationId: string } } {
  return Object.fromEntries(Object.entries(table).map(([id, schema]) => [id, { operationId: id, ...schema }])) as never
}


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
