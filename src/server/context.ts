import type { FastifyRequest } from 'fastify'
import type { Baton } from '../baton.js'
import { OPEN, type Access } from './auth.js'
import type { DataDir } from './data-dir.js'
import type { EventHub } from './events.js'
import type { LeaseDesk } from './leases.js'
import type { LeaseIds } from './lease-id.js'
import { HttpError } from './http-errors.js'
import type { LeaseCaps, Quotas, WaitLimits } from './limits.js'
import { monotonicNow } from '../core/clock.js'
import type { Metrics } from './metrics.js'
import type { SessionTable } from './sessions.js'
import type { RequestWindow } from './request-window.js'
import type { LongPoll } from './waits.js'

/** What every route handler shares: the library client and the server's bookkeeping. */
export interface ServerContext {
  readonly baton: Baton
  readonly hub: EventHub
  readonly desk: LeaseDesk
  readonly metrics: Metrics
  readonly limits: WaitLimits
  readonly dataDir: DataDir | undefined
  /** Per-token quotas of waiters, streams and holds. */
  readonly quotas: Quotas
  /** Bytes an event stream may have unsent before it is ended as fallen behind. */
  readonly eventBufferBytes: number
  /** Caps on ttl and lock delay. */
  readonly caps: LeaseCaps
  /** The ttl of a grant that asks none: 30 s, or --max-ttl when that is shorter. */
  readonly defaultTtlMs: number
  /** Mints and checks lease ids under the secret of this store's servers. */
  readonly leaseIds: LeaseIds
  /** Monotonic instant before which grants are refused after a start without --data-dir (0: none). */
  readonly grantsFrom: number
  /** Waiting acquires by the client's waitId, so DELETE /v1/waits/{waitId} can end them. */
  readonly waits: Map<string, LongPoll>
  /** Client sessions: one keepalive renews a client's leases and proves its waiters alive. */
  readonly sessions: SessionTable
  /** Outcomes of idempotent acquires, for a bounded window: a late duplicate never gets a new hold. */
  readonly outcomes: RequestWindow
  /** Request ids of idempotent acquires in progress. */
  readonly requests: Set<string>
  /** Every waiting acquire, aborted at shutdown. */
  readonly waiting: Set<AbortController>
  /** Open event streams, ended at shutdown. */
  readonly streams: Set<{ end(): void; buffered?(): number }>
  /** Longest plain JSON long-poll before "still waiting"; NDJSON streams send a heartbeat every third of it. */
  readonly pollMaxMs: number
  shuttingDown: boolean
}

declare module 'fastify' {
  interface FastifyRequest {
    access: Access | null
  }
}

export const accessOf = (request: FastifyRequest): Access => request.access ?? OPEN

/** Who a request counts against for per-token quotas: its token, or on an open server its client's address. */
export const tenantOf = (request: FastifyRequest): string => (request.access ? request.access.tenant : `ip ${request.ip}`)

/** Milliseconds before grants resume after a start (0: they are allowed). */
export function restartWaitLeftMs(ctx: ServerContext): number {
  const fromStart = ctx.grantsFrom > 0 ? Math.max(0, Math.ceil(ctx.grantsFrom - monotonicNow())) : 0
  return Math.max(fromStart, ctx.dataDir?.restartDelayLeftMs() ?? 0)
}

/** Why grants are refused after a start, for 503 answers, /readyz and the start-up line. */
export function restartWaitReason(ctx: ServerContext, leftMs: number): string {
  const s = Math.ceil(leftMs / 1000)
  return ctx.dataDir
    ? `the server restarted without its leases and grants nothing for ${s} s more, until every lease it could have granted before has run out`
    : `the server started without --data-dir, so a lease granted by its previous run may still be held: it grants nothing for ${s} s more, the longest ttl and lock delay a previous run could grant (--max-ttl or the 30 s default ttl, whichever is longer, plus --max-lock-delay)`
}

/** 503 while shutting down or while a restarted embedded store waits out the leases it may have granted before. */
export function refuseGrantsIfNotReady(ctx: ServerContext): void {
  if (ctx.shuttingDown) throw shuttingDown()
  const left = restartWaitLeftMs(ctx)
  if (left > 0) throw new HttpError('BACKEND_UNAVAILABLE', restartWaitReason(ctx, left), Math.ceil(left / 1000))
}

export const shuttingDown = (): HttpError =>
  new HttpError('BACKEND_UNAVAILABLE', 'the server is shutting down; retry on another server or after it restarts', 1)
