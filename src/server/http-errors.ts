import type { FastifyError, FastifyReply } from 'fastify'
import { BatonError, type ErrorCode, isBatonError } from '../index.js'
import { ownerDigest } from './lease-id.js'

/**
 * Error codes of the HTTP API: the BatonError codes, plus those only HTTP
 * has (no such route, lock or wait; too many waiting requests; a token's quota).
 */
export type HttpErrorCode = ErrorCode | 'NOT_FOUND' | 'TOO_MANY_WAITERS' | 'QUOTA_EXCEEDED'

/**
 * Status per code. LOCK_TIMEOUT is 409 Conflict ("someone else holds it"),
 * not 408: clients and proxies treat 408 as "the connection timed out" and
 * may silently re-send the request, which would queue a second acquire.
 */
const STATUS: Record<HttpErrorCode, number> = {
  LOCK_TIMEOUT: 409,
  ABORTED: 503,
  LEASE_LOST: 410,
  NOT_HOLDER: 410,
  INVALID_ARGUMENT: 400,
  BACKEND_UNAVAILABLE: 503,
  QUORUM_NOT_REACHED: 503,
  REPLICA_ACK_TIMEOUT: 503,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  CLOSED: 503,
  STALE_TOKEN: 409,
  NOT_FOUND: 404,
  TOO_MANY_WAITERS: 429,
  QUOTA_EXCEEDED: 429,
}

/** An error the API answers with: status, code, message, and optionally a Retry-After in seconds. */
export class HttpError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    readonly retryAfterS?: number,
    readonly status = STATUS[code],
  ) {
    super(message)
  }
}

export const errorSchema = {
  $id: 'Error',
  description: 'Every error answer: a code from a fixed list (match on it) and a message',
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', enum: Object.keys(STATUS) as HttpErrorCode[] },
        message: { type: 'string', description: 'what happened, for people; match on code' },
      },
    },
  },
} as const

/** Turns anything thrown in a handler into the API's error answer. Never a 500 for a client's mistake. */
export function sendError(reply: FastifyReply, error: unknown): FastifyReply {
  const http = toHttpError(error)
  if (http.retryAfterS !== undefined) void reply.header('retry-after', String(http.retryAfterS))
  if (http.code === 'UNAUTHORIZED') void reply.header('www-authenticate', 'Bearer')
  return reply.code(http.status).type('application/json; charset=utf-8')
    .send(JSON.stringify({ error: { code: http.code, message: http.message } }))
}

export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (isBatonError(error)) return new HttpError(error.code, publicMessage(error), error.retryable && error.code !== 'LOCK_TIMEOUT' ? 1 : undefined)
  const fastify = error as FastifyError
  if (fastify && typeof fastify === 'object' && 'statusCode' in fastify && typeof fastify.statusCode === 'number') {
    const status = fastify.statusCode
    if (fastify.validation) {
      const [first] = fastify.validation
      const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty
      return new HttpError('INVALID_ARGUMENT', `bad request: ${fastify.message}${extra ? ` ("${extra}" is not a known field)` : ''}`)
    }
    if (status === 413) return new HttpError('INVALID_ARGUMENT', `the request body is too large: ${fastify.message}`, undefined, 413)
    if (status === 415) return new HttpError('INVALID_ARGUMENT', `send the body as application/json: ${fastify.message}`, undefined, 415)
    if (status >= 400 && status < 500) return new HttpError('INVALID_ARGUMENT', fastify.message, undefined, status)
  }
  return new HttpError('BACKEND_UNAVAILABLE', `internal error: ${error instanceof Error ? error.message : String(error)}`)
}

/** BatonError messages start with "baton: "; the API's messages do not repeat it. */
function publicMessage(error: BatonError): string {
  const message = error.message.replace(/^baton: /, '')
  // A holder's owner is a capability on the server: show its digest only.
  return error.holder ? message.split(error.holder.owner).join(ownerDigest(error.holder.owner)) : message
}
