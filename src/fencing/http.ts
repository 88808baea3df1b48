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
import { BatonError, invalidArgument, isBatonError } from '../core/errors.js'
import { MemoryFence, checkResource, parseFencingToken, staleToken } from './fence.js'

/** Request header carrying the holder's fencing token (decimal). */
export const FENCING_TOKEN_HEADER = 'baton-fencing-token'
/** Request header naming the lock (the fenced resource), percent-encoded: see encodeLockHeader. */
export const FENCING_LOCK_HEADER = 'baton-lock'

/** How many names an HttpFence keeps one by one unless told (see MemoryFence's maxResources). */
export const DEFAULT_MAX_FENCED_NAMES = 10_000

/**
 * The lock name as a header value. A header carries only visible ASCII and
 * loses leading and trailing spaces, and a lock name may be `報告/daily` or
 * end in a space: so every UTF-8 byte of the name outside A-Z a-z 0-9
 * `-_.!~*'()` and `/` `:` is written %XX (encodeURIComponent, with `/` and
 * `:` left as they are, for legible headers). A name of plain visible ASCII
 * without `%` or spaces is sent as it is, as before this encoding existed.
 */
export function encodeLockHeader(name: string): string {
  try {
    return encodeURIComponent(name).replace(/%2F/g, '/').replace(/%3A/g, ':')
  } catch {
    throw invalidArgument(`a lock name must be well-formed Unicode (it has a lone surrogate): ${JSON.stringify(name.slice(0, 64))}`)
  }
}

/** The lock name of a Baton-Lock header (the guard's side of encodeLockHeader). */
export function decodeLockHeader(value: string): string {
  // Only visible ASCII is the encoding's: raw UTF-8 bytes (a client from before it) reach
  // Node as latin1 text, another name than the client meant, and so another fence.
  if (!/^[\x21-\x7e]*$/.test(value)) {
    throw invalidArgument(`${FENCING_LOCK_HEADER} must be visible ASCII: the lock name percent-encoded as UTF-8 (fencingHeaders(lease) does it), got ${JSON.stringify(value.slice(0, 64))}`)
  }
  try {
    return decodeURIComponent(value)
  } catch {
    throw invalidArgument(`${FENCING_LOCK_HEADER} is the lock name percent-encoded as UTF-8 (fencingHeaders(lease) does it), got ${JSON.stringify(value.slice(0, 64))}`)
  }
}

/** The headers a lock holder sends with each write to a fenced HTTP service. */
export function fencingHeaders(lease: { readonly name: string; readonly token: bigint }): Record<string, string> {
  return { 'Baton-Lock': encodeLockHeader(lease.name), 'Baton-Fencing-Token': lease.token.toString() }
}

export interface HttpFenceOptions {
  /** Where the highest tokens live. Default: a new MemoryFence of this guard, keeping `maxResources` names. */
  fence?: MemoryFence
  /** The default fence's bound on names kept one by one (default 10,000); see MemoryFence. */
  maxResources?: number
  /** Refuse requests without the headers (428). Default true; false lets them through unfenced. */
  required?: boolean
  /** The resource a request writes. Default: its Baton-Lock header, decoded. */
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
    this.fence = options.fence ?? new MemoryFence({ maxResources: options.maxResources ?? DEFAULT_MAX_FENCED_NAMES })
    this.required = options.required ?? true
    this.resourceOf = options.resource ?? ((request) => {
      const value = header(request, FENCING_LOCK_HEADER)
      return value === undefined ? undefined : decodeLockHeader(value)
    })
  }

  /**
   * Decides one request. When it is admitted, call `done()` once its write is
   * over (the adapters below do it when the response ends).
   */
  async admit(request: IncomingMessage): Promise<Admission> {
    let rawToken: string | undefined
    let resource: string | undefined
    let token: bigint
    try {
      rawToken = header(request, FENCING_TOKEN_HEADER)
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

/**
 * One header's value; INVALID_ARGUMENT (400) when it was sent more than once:
 * node joins repeated headers with ", ", and two lock names or two tokens
 * leave the guard no way to tell which one the holder meant.
 */
function header(request: IncomingMessage, name: string): string | undefined {
  const distinct = (request as { headersDistinct?: Record<string, string[] | undefined> }).headersDistinct?.[name]
  const raw = request.headers[name]
  const values = distinct ?? (raw === undefined ? [] : Array.isArray(raw) ? raw : [raw])
  if (values.length > 1) throw invalidArgument(`${name} was sent ${values.length} times: send it once`)
  return values[0]
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
