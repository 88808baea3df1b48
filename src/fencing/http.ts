/**
 * Fencing across HTTP: the lock holder sends its token in a header, and a
 * guard in front of the protected service refuses a token below the highest
 * it has accepted with 409 STALE_TOKEN.
 *
 * The guard serialises the requests of one resource in its process, from the
 * check until the response ends, so a stale request can not pass the check
 * and then write after a newer holder's request. That protects a service of
 * ONE process; behind several replicas, fence in the data store itself
 * (PostgresFence, RedisFence) — the header is still how the token travels.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { BatonError, isBatonError } from '../core/errors.js'
import { MemoryFence, checkResource, parseFencingToken, staleToken } from './fence.js'

/** Request header carrying the holder's fencing token (decimal). */
export const FENCING_TOKEN_HEADER = 'baton-fencing-token'
/** Request header naming the lock (the fenced resource). */
export const FENCING_LOCK_HEADER = 'baton-lock'

/** The headers a lock holder sends with each write to a fenced HTTP service. */
export function fencingHeaders(lease: { readonly name: string; readonly token: bigint }): Record<string, string> {
  return { 'Baton-Lock': lease.name, 'Baton-Fencing-Token': lease.token.toString() }
}

export interface HttpFenceOptions {
  /** Where the highest tokens live. Default: a new MemoryFence of this guard. */
  fence?: MemoryFence
  /** Refuse requests without the headers (428). Default true; false lets them through unfenced. */
  required?: boolean
  /** The resource a request writes. Default: its Baton-Lock header. */
  resource?: (request: IncomingMessage) => string | undefined
}

type Admission =
  | { readonly ok: true; readonly done: () => void }
  | { readonly ok: false; readonly status: number; readonly body: Record<string, string> }

type Next = (error?: unknown) => void

/** A fencing guard for node:http, express and fastify. One per protected service. */
export class HttpFence {
  readonly fence: MemoryFence
  private readonly required: boolean
  private readonly resourceOf: (request: IncomingMessage) => string | undefined
  /** Per resource: the tail of the chain of requests admitted or waiting. */
  private readonly turns = new Map<string, Promise<void>>()

  constructor(options: HttpFenceOptions = {}) {
    this.fence = options.fence ?? new MemoryFence()
    this.required = options.required ?? true
    this.resourceOf = options.resource ?? ((request) => header(request, FENCING_LOCK_HEADER))
  }

  /**
   * Decides one request. When it is admitted, call `done()` once its write is
   * over (the adapters below do it when the response ends).
   */
  async admit(request: IncomingMessage): Promise<Admission> {
    const rawToken = header(request, FENCING_TOKEN_HEADER)
    let resource: string | undefined
    let token: bigint
    try {
      resource = this.resourceOf(request)
      if (rawToken === undefined || resource === undefined) {
        if (!this.required) return { ok: true, done: () => {} }
        return refuse(428, new BatonError('INVALID_ARGUMENT',
          `this resource is fenced: send the lock's name in ${FENCING_LOCK_HEADER} and its fencing token in ${FENCING_TOKEN_HEADER} (fencingHeaders(lease))`))
      }
      checkResource(resource)
      token = parseFencingToken(rawToken)
    } catch (error) {
      if (isBatonError(error)) return refuse(400, error)
      throw error
    }
    const done = await this.takeTurn(resource)
    const verdict = this.fence.decide(resource, token)
    if (verdict.accepted) return { ok: true, done }
    done()
    return refuse(409, staleToken(resource, token, verdict.highest), { lock: resource, token: token.toString(), highest: verdict.highest.toString() })
  }

  /** Wraps a node:http request handler. */
  handler(next: (request: IncomingMessage, response: ServerResponse) => void): (request: IncomingMessage, response: ServerResponse) => void {
    return (request, response) => {
      this.admit(request).then((admission) => {
        if (!admission.ok) return answer(response, admission)
        if (!whenOver(response, admission.done)) return
        try {
          next(request, response)
        } catch (error) {
          // A handler that throws must not keep the resource's turn (and every later request) for ever:
          // end its response, then let the error go on as node:http would have it.
          if (response.headersSent) response.destroy()
          else answer(response, { ok: false, status: 500, body: { code: 'HANDLER_FAILED', message: 'the request handler threw' } })
          throw error
        }
      }, (error: unknown) => answer(response, refuse(500, new BatonError('INVALID_ARGUMENT', String(error)))))
    }
  }

  /** Express (connect-style) middleware. */
  express(): (request: IncomingMessage, response: ServerResponse, next: Next) => void {
    return (request, response, next) => {
      this.admit(request).then((admission) => {
        if (!admission.ok) return answer(response, admission)
        if (!whenOver(response, admission.done)) return
        next()
      }, next)
    }
  }

  /** A fastify `preHandler` hook: `fastify.addHook('preHandler', fence.fastify())` or per route. */
  fastify(): (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; code(status: number): unknown; send(body: unknown): unknown; hijack(): unknown }) => Promise<void> {
    return async (request, reply) => {
      const admission = await this.admit(request.raw)
      if (!admission.ok) {
        reply.code(admission.status)
        await reply.send(admission.body)
        return
      }
      // The client went away while this request waited for its turn: the
      // handler must not run (it would write outside the turn, already given back).
      if (!whenOver(reply.raw, admission.done)) reply.hijack()
    }
  }

  /** Waits for the requests of `resource` admitted before, and returns the call that lets the next one in. */
  private async takeTurn(resource: string): Promise<() => void> {
    const before = this.turns.get(resource) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((resolve) => { release = resolve })
    const tail = before.then(() => mine)
    this.turns.set(resource, tail)
    await before
    let released = false
    return () => {
      if (released) return
      released = true
      release()
      // Forget the chain when nobody queued behind this request.
      if (this.turns.get(resource) === tail) this.turns.delete(resource)
    }
  }
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

type Refusal = Extract<Admission, { ok: false }>

function refuse(status: number, error: BatonError, extra: Record<string, string> = {}): Refusal {
  return { ok: false, status, body: { code: error.code, message: error.message.replace(/^baton: /, ''), ...extra } }
}

function answer(response: ServerResponse, admission: Refusal): void {
  const body = JSON.stringify(admission.body)
  response.writeHead(admission.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
  response.end(body)
}

/**
 * Calls `done` when the response is over. A request whose client went away
 * while it waited for its turn is over already: its 'close' has fired and
 * will not fire again, so `done` is called now and false returned (the
 * handler must not run), else the turn would never come back and every later
 * request of the resource would wait for ever.
 */
function whenOver(response: ServerResponse, done: () => void): boolean {
  if (response.writableFinished || response.destroyed || response.closed || response.socket?.destroyed === true) {
    done()
    return false
  }
  response.once('finish', done)
  response.once('close', done)
  return true
}
