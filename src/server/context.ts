import type { FastifyRequest } from 'fastify'
import type { Baton } from '../baton.js'
import { OPEN, type Access } from './auth.js'
import type { DataDir } from './data-dir.js'
import type { EventHub } from './events.js'
import type { LeaseDesk } from './leases.js'
import { HttpError } from './http-errors.js'
import type { WaitLimits } from './limits.js'
import type { Metrics } from './metrics.js'

/** What every route handler shares: the library client and the server's bookkeeping. */
export interface ServerContext {
  readonly baton: Baton
  readonly hub: EventHub
  readonly desk: LeaseDesk
  readonly metrics: Metrics
  readonly limits: WaitLimits
  readonly dataDir: DataDir | undefined
  /** Waiting acquires by the client's waitId, so DELETE /v1/waits/{waitId} can end them. */
  readonly waits: Map<string, { controller: AbortController; done: Promise<unknown> }>
  /** Request ids of idempotent acquires in progress. */
  readonly requests: Set<string>
  /** Every waiting acquire, aborted at shutdown. */
  readonly waiting: Set<AbortController>
  /** Open event streams, ended at shutdown. */
  readonly streams: Set<{ end(): void }>
  shuttingDown: boolean
}

declare module 'fastify' {
  interface FastifyRequest {
    access: Access | null
  }
}

export const accessOf = (request: FastifyRequest): Access => request.access ?? OPEN

/** 503 while shutting down or while a restarted embedded store waits out the leases it may have granted before. */
export function refuseGrantsIfNotReady(ctx: ServerContext): void {
  if (ctx.shuttingDown) throw shuttingDown()
  const left = ctx.dataDir?.restartDelayLeftMs() ?? 0
  if (left > 0) {
    throw new HttpError(
      'BACKEND_UNAVAILABLE',
      `the server restarted without its leases and grants nothing for ${Math.ceil(left / 1000)} s more, until every lease it could have granted before has run out`,
      Math.ceil(left / 1000),
    )
  }
}

export const shuttingDown = (): HttpError =>
  new HttpError('BACKEND_UNAVAILABLE', 'the server is shutting down; retry on another server or after it restarts', 1)
