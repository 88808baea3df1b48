import { Agent, request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'
import { BatonError, backendUnavailable } from '../../core/errors.js'
import { traceContext } from '../../core/trace-context.js'

/**
 * The few HTTP calls of the driver: JSON in, JSON or the API's error object
 * out. Transport failures become BACKEND_UNAVAILABLE; auth answers become
 * UNAUTHORIZED / FORBIDDEN; every other error answer is returned to the
 * caller as `{ status, code, message }` to map to a driver status.
 */
export interface ApiError {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly retryAfterMs: number | undefined
}

export type ApiResult<T> = { ok: true; body: T } | { ok: false; error: ApiError }

export class Api {
  constructor(
    readonly base: string,
    private readonly bearer: string | undefined,
    readonly timeoutMs: number,
    /** An https:// server with a private CA or a client certificate (?ca=, ?cert=, ?key=): requests go through this agent. */
    private readonly tlsAgent?: Agent,
  ) {}

  /**
   * fetch(), or with a TLS agent the same over node:https: the built-in
   * fetch takes no CA or client certificate of its own (its agent class is
   * not public in Node 20), and this driver keeps to no dependencies.
   */
  fetch(path: string, init: RequestInit & { method: string }): Promise<Response> {
    const url = this.base + path
    return this.tlsAgent ? fetchWithAgent(url, init, this.tlsAgent) : globalThis.fetch(url, init)
  }

  close(): void {
    this.tlsAgent?.destroy()
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers = { ...(this.bearer ? { authorization: `Bearer ${this.bearer}` } : {}), ...extra }
    // The caller's trace goes on to the server (W3C traceparent) when baton/otel is instrumenting.
    traceContext.inject?.(headers)
    return headers
  }

  async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<ApiResult<T>> {
    let response: Response
    try {
      response = await this.fetch(path, {
        method,
        headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: signal ?? AbortSignal.timeout(this.timeoutMs),
      })
    } catch (cause) {
      throw backendUnavailable('baton server', cause)
    }
    return readAnswer<T>(response)
  }
}

/** One request through `agent`, answered as a web Response whose body streams (long-polls, event streams). */
function fetchWithAgent(url: string, init: RequestInit & { method: string }, agent: Agent): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = httpsRequest(url, {
      method: init.method,
      headers: init.headers as Record<string, string> | undefined,
      agent,
      ...(init.signal ? { signal: init.signal } : {}),
    }, (response) => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(response.headers)) {
        for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, each)
      }
      const status = response.statusCode ?? 502
      const body = status === 204 || status === 304 ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>)
      if (!body) response.resume()
      resolve(new Response(body, { status, headers }))
    })
    request.once('error', reject)
    request.end(typeof init.body === 'string' ? init.body : undefined)
  })
}

export async function readAnswer<T>(response: Response): Promise<ApiResult<T>> {
  let text: string
  try {
    text = await response.text()
  } catch (cause) {
    throw backendUnavailable('baton server', cause)
  }
  if (response.ok) return { ok: true, body: (text ? JSON.parse(text) : undefined) as T }
  return { ok: false, error: toApiError(response.status, text, response.headers.get('retry-after')) }
}

export function toApiError(status: number, text: string, retryAfter: string | null): ApiError {
  let code = 'BACKEND_UNAVAILABLE'
  let message = `the baton server answered ${status}`
  try {
    const parsed = JSON.parse(text.split('\n').filter(Boolean).pop() ?? '') as { error?: { code?: string; message?: string } }
    if (parsed.error?.code) code = parsed.error.code
    if (parsed.error?.message) message = parsed.error.message
  } catch {
    // Not the API's error object (a proxy's page): keep the status.
  }
  const seconds = retryAfter === null ? NaN : Number(retryAfter)
  return { status, code, message, retryAfterMs: Number.isFinite(seconds) ? seconds * 1000 : undefined }
}

/** Throws for answers no driver status covers. */
export function unexpected(error: ApiError): never {
  if (error.code === 'UNAUTHORIZED' || error.code === 'FORBIDDEN') {
    throw new BatonError(error.code, `the baton server refused: ${error.message} (check the token in the store URL, http://:TOKEN@host:port)`)
  }
  if (error.code === 'INVALID_ARGUMENT') throw new BatonError('INVALID_ARGUMENT', `the baton server refused the request: ${error.message}`)
  throw backendUnavailable('baton server', new Error(`${error.status} ${error.code}: ${error.message}`))
}
