/**
 * What an acquire request asks, checked and turned into the library's terms:
 * its body, the lock spec, and the extras (owner, description, a leader's
 * value) a detached grant carries. Shared by the acquire, campaign and
 * multi-lock routes; kept apart from any route so none imports another.
 */
import { type LockSpec, MAX_DESCRIPTION_BYTES, MAX_VALUE_BYTES, parseDuration, parseWeight } from '../internal-api.js'
import { kindOf } from './events.js'
import { HttpError } from './http-errors.js'

export type Duration = number | string
export interface AcquireBody {
  ttl?: Duration
  wait?: Duration
  mode?: 'exclusive' | 'read' | 'write' | 'permit'
  permits?: number
  weight?: number
  fair?: boolean
  lockDelay?: Duration
  waitId?: string
  requestId?: string
  session?: string
  description?: string
  /** Leader election: the candidate's announced value, kept beside the hold (src/server/election-routes.ts). */
  value?: string
}
export type NameParams = { Params: { name: string } }

/**
 * The lock spec of one acquire request (mutex, one side of a rwlock, a
 * semaphore permit), built directly rather than through the library's lock
 * objects: every request is its own client (no reentrancy between requests),
 * so a per-request mutex handle would be made and dropped for nothing.
 */
export function specOf(name: string, body: AcquireBody): LockSpec {
  const mode = body.mode ?? 'exclusive'
  if (body.permits !== undefined && mode !== 'permit') throw new HttpError('INVALID_ARGUMENT', '"permits" is only for mode "permit"')
  if (mode === 'permit' && body.permits === undefined) throw new HttpError('INVALID_ARGUMENT', 'mode "permit" needs "permits", the semaphore\'s size')
  if (body.weight !== undefined && mode !== 'permit') throw new HttpError('INVALID_ARGUMENT', '"weight" is only for mode "permit"')
  // A value names the one leader: a hold shared with others (read, permit) can not be it.
  if (body.value !== undefined && mode !== 'exclusive') throw new HttpError('INVALID_ARGUMENT', `"value" is only for mode "exclusive" (a leader's value), not "${mode}"`)
  const lockDelayMs = body.lockDelay === undefined ? 0 : parseDuration(body.lockDelay, 'lockDelay', { allowZero: true })
  const spec: LockSpec = { name, kind: kindOf(mode), mode, fair: body.fair ?? false, permits: body.permits ?? 1, lockDelayMs }
  return mode === 'permit' ? { ...spec, weight: parseWeight(body.weight, spec.permits) } : spec
}

/** Owner (idempotent acquires), description (who asks) and a candidate's value for takeDetached, when given. */
export function detachedExtras(
  owner: string | undefined, description: string | undefined, value?: string,
): { owner?: string; description?: string; value?: string } {
  return {
    ...(owner !== undefined ? { owner } : {}), ...(description !== undefined ? { description: clipped(description) } : {}),
    ...(value !== undefined ? { value: checkedValue(value) } : {}),
  }
}

/** A description cut to MAX_DESCRIPTION_BYTES of UTF-8, the most a store is given. */
export function clipped(text: string): string {
  // Stores keep a description as text, and Redis puts "\0" and the leader's value after it: a NUL would forge a value.
  if (text.includes('\0')) throw new HttpError('INVALID_ARGUMENT', '"description" must not contain a NUL character')
  if (Buffer.byteLength(text) <= MAX_DESCRIPTION_BYTES) return text
  let cut = text.slice(0, MAX_DESCRIPTION_BYTES)
  while (Buffer.byteLength(cut) > MAX_DESCRIPTION_BYTES) cut = cut.slice(0, -1)
  return cut
}

/** A candidate's value within the bound the stores keep (bytes: the schema counts characters). */
export function checkedValue(value: string): string {
  if (value.includes('\0')) throw new HttpError('INVALID_ARGUMENT', '"value" must not contain a NUL character (stores keep it as text)')
  const bytes = Buffer.byteLength(value)
  if (bytes > MAX_VALUE_BYTES) throw new HttpError('INVALID_ARGUMENT', `"value" is ${bytes} bytes; at most ${MAX_VALUE_BYTES} UTF-8 bytes are kept`)
  return value
}
