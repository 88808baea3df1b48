/**
 * One error class for everything baton reports. `code` is stable and meant for
 * programs; `message` is for people and names the setting to change.
 */
export type ErrorCode =
  | 'LOCK_TIMEOUT'
  | 'ABORTED'
  | 'LEASE_LOST'
  | 'NOT_HOLDER'
  | 'INVALID_ARGUMENT'
  | 'BACKEND_UNAVAILABLE'
  | 'QUORUM_NOT_REACHED'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  /** The client was closed: pending acquires end with it, later calls fail with it. */
  | 'CLOSED'
  /**
   * A fenced resource refused a write: a holder with a higher fencing token
   * has written since (baton/fencing). The lock was lost; never retry as is.
   */
  | 'STALE_TOKEN'
  /**
   * Redis with `?replicas=N`: fewer than N replicas acknowledged a grant
   * (given back) or a renewal (not counted) within `replicaTimeout`. The
   * store answered, so it is not BACKEND_UNAVAILABLE; retryable, as a
   * replica that lags now may keep up later.
   */
  | 'REPLICA_ACK_TIMEOUT'

/** Codes for which trying the same call again later can succeed. */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'LOCK_TIMEOUT',
  'BACKEND_UNAVAILABLE',
  'QUORUM_NOT_REACHED',
  'REPLICA_ACK_TIMEOUT',
])

export interface HolderInfo {
  owner: string
  token: bigint
  expiresAt: number
}

export interface BatonErrorOptions {
  cause?: unknown
  /** The current holder, when LOCK_TIMEOUT knows who has the lock. */
  holder?: HolderInfo
  /** The lock name the failure concerns. */
  lockName?: string
  /** Per-node evidence for QUORUM_NOT_REACHED / BACKEND_UNAVAILABLE. */
  nodes?: Record<string, string>
}

export class BatonError extends Error {
  readonly code: ErrorCode
  readonly retryable: boolean
  readonly holder?: HolderInfo
  readonly lockName?: string
  readonly nodes?: Record<string, string>

  constructor(code: ErrorCode, message: string, options: BatonErrorOptions = {}) {
    super(`baton: ${message}`, options.cause === undefined ? undefined : { cause: redactedCause(options.cause) })
    this.name = 'BatonError'
    this.code = code
    this.retryable = RETRYABLE.has(code)
    if (options.holder) this.holder = options.holder
    if (options.lockName !== undefined) this.lockName = options.lockName
    if (options.nodes) this.nodes = options.nodes
  }
}

/** What a library error may keep as a cause: facts about the failure, never the command or settings it carries. */
const CAUSE_FACTS = ['code', 'errno', 'syscall', 'address', 'port', 'severity', 'detail', 'hint', 'routine'] as const

/**
 * A store library's error, as a cause: its name, message, stack and the facts
 * above, nothing else. Libraries hang their request on their errors (ioredis
 * a refused AUTH's arguments: the password), and `console.error(err)` prints
 * a cause whole.
 */
function redactedCause(cause: unknown): unknown {
  if (!(cause instanceof Error) || cause instanceof BatonError) return cause
  const copy = new Error(cause.message, cause.cause === undefined ? undefined : { cause: redactedCause(cause.cause) })
  copy.name = cause.name
  if (cause.stack !== undefined) copy.stack = cause.stack
  const facts = cause as unknown as Record<string, unknown>
  for (const key of CAUSE_FACTS) {
    const value = facts[key]
    if (typeof value === 'string' || typeof value === 'number') Object.defineProperty(copy, key, { value, enumerable: true })
  }
  return copy
}

export function isBatonError(value: unknown, code?: ErrorCode): value is BatonError {
  return value instanceof BatonError && (code === undefined || value.code === code)
}

export const invalidArgument = (message: string, cause?: unknown): BatonError =>
  new BatonError('INVALID_ARGUMENT', message, { cause })

/**
 * Wraps a transport failure of a store. Drivers call this and never build
 * messages of their own, so every store reports an outage the same way.
 */
export function backendUnavailable(store: string, cause: unknown, answered = isReplyError(cause)): BatonError {
  if (cause instanceof BatonError) return cause
  let detail = cause instanceof Error ? cause.message : String(cause)
  // fetch says only "fetch failed"; the reason (ECONNREFUSED host:port) is its cause.
  const inner = cause instanceof Error ? cause.cause : undefined
  if (inner instanceof Error && inner.message && !detail.includes(inner.message)) detail += `: ${inner.message}`
  const message = answered
    ? `the ${store} answered with an error: ${detail}`
    : `the ${store} did not answer (${detail}); check that it is running and reachable, or raise "connectTimeout" / "commandTimeout" in connect() options`
  return new BatonError('BACKEND_UNAVAILABLE', message, { cause })
}

/**
 * A store that answered with an error (a refused command, a full disk, a key
 * of another program) is not the same as one that did not answer. Drivers
 * whose client library marks answered errors otherwise pass `answered`.
 */
function isReplyError(cause: unknown): boolean {
  return cause instanceof Error && cause.name === 'ReplyError'
}

/** The store refused the credentials (or asked for some): not retryable, names the user, never the password. */
export function unauthorized(store: string, message: string, cause?: unknown): BatonError {
  return new BatonError('UNAUTHORIZED', `the ${store} refused the connection: ${message}`, { cause })
}

export function leaseLost(name: string, why: string): BatonError {
  return new BatonError('LEASE_LOST', `the hold on "${name}" was lost: ${why}`, { lockName: name })
}

export function lockTimeout(name: string, waitedMs: number, holder?: HolderInfo): BatonError {
  const who = holder ? ` (held by ${holder.owner}, token ${holder.token})` : ''
  return new BatonError(
    'LOCK_TIMEOUT',
    `could not acquire "${name}" within ${waitedMs} ms${who}; raise "wait" to wait longer`,
    { lockName: name, ...(holder ? { holder } : {}) },
  )
}

export function aborted(name: string, reason: unknown): BatonError {
  return new BatonError('ABORTED', `acquiring "${name}" was aborted by its signal`, {
    cause: reason,
    lockName: name,
  })
}

export function clientClosed(what = 'this baton client'): BatonError {
  return new BatonError('CLOSED', `${what} is closed (close() was called); call connect() again for a new one`)
}
