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
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    const headers = { ...(this.bearer ? { authorization: `Bearer ${this.bearer}` } : {}), ...extra }
    // The caller's trace goes on to the server (W3C traceparent) when baton/otel is instrumenting.
    traceContext.inject?.(headers)
    return headers
  }

  async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<ApiResult<T>> {
    let response: Response
    try {
      response = await fetch(this.base + path, {
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
