import type { AcquireRequest, AcquireResult } from '../../core/driver.js'
import { weightOf } from '../../core/compat.js'
import { unexpected, type ApiError } from './api.js'

/** What the server answers for a grant. */
export interface GrantBody {
  leaseId: string
  token: string
  ttlMs: number
  owner: string
  mode: string
}

export function lockPath(name: string, suffix: string): string {
  return `/v1/locks/${encodeURIComponent(name)}${suffix}`
}

/** The body of POST /v1/locks/{name}/acquire: `waitMs` 0 for one attempt, more for a waiting request. */
export function acquireBody(request: AcquireRequest, waitMs: number, session: string | undefined): Record<string, unknown> {
  return {
    ttl: request.ttlMs, wait: waitMs, mode: request.mode, fair: request.fair,
    ...(request.mode === 'permit' ? { permits: request.permits } : {}),
    ...(request.mode === 'permit' && weightOf(request) > 1 ? { weight: weightOf(request) } : {}),
    ...(request.lockDelayMs > 0 ? { lockDelay: request.lockDelayMs } : {}),
    ...(session !== undefined ? { session } : {}),
    ...(request.description !== undefined ? { description: request.description } : {}),
    ...(request.value !== undefined ? { value: request.value } : {}),
  }
}

/** A refused acquire as the core reads it: busy (try again), conflict, or a failure thrown. */
export function notGranted(error: ApiError): AcquireResult {
  if (error.code === 'LOCK_TIMEOUT') return { status: 'busy', retryAfterMs: 1 }
  if (error.status === 429) return { status: 'busy', retryAfterMs: error.retryAfterMs ?? 1000 }
  if (error.status === 400 && error.code === 'INVALID_ARGUMENT') return { status: 'conflict', detail: error.message }
  unexpected(error)
}
