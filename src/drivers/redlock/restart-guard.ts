import diagnostics_channel from 'node:diagnostics_channel'
import { monotonicNow } from '../../core/clock.js'

/**
 * The delayed restart of the Redlock paper, done by the client: a node that
 * restarted may have lost the keys of live locks (no persistence, or fsync
 * once a second), so its votes do not count until every lease it could have
 * held has run out: the largest ttl in use, counted from its restart.
 *
 * A restart is seen two ways:
 * - its run_id changed since this client last checked (after any reconnect);
 * - at first contact, its uptime is below `?maxTtl=` of the store URL (the
 *   largest ttl any client uses; this client alone can not know others').
 * After a seen restart the window is the larger of `?maxTtl=` and the largest
 * ttl this client asks for, evaluated at each attempt.
 * Between a dropped connection and the next run_id check, nothing the node
 * says counts.
 */
export interface NodeEvent {
  readonly store: 'redlock'
  /** The node as host:port. */
  readonly node: string
  readonly state: 'counted' | 'excluded' | 'down'
  readonly reason: string
}

/** Diagnostics channel of node state changes (exclusion by the restart guard, return, loss). */
export const nodeChannel = diagnostics_channel.channel('baton:redlock-node')

export type GuardState =
  | { readonly state: 'counted' }
  | { readonly state: 'unverified' }
  | { readonly state: 'excluded'; readonly untilMs: number; readonly reason: string }

/** The two answers without details, made once (every round asks each node). */
export const COUNTED: GuardState = { state: 'counted' }
export const UNVERIFIED: GuardState = { state: 'unverified' }

export class RestartGuard {
  private runId: string | undefined
  private verified = false
  /** Monotonic instant of the restart being guarded, or undefined. */
  private restartedAt: number | undefined
  /** A restart seen at first contact is guarded by ?maxTtl= only; one seen later by this client's ttls too. */
  private seenLive = false
  private lastState: GuardState['state'] = 'unverified'

  constructor(private readonly node: string, private readonly maxTtlMs: number) {}

  /**
   * Connections so far: an answer counts only if its request was sent on the
   * connection it came back on. ioredis re-sends an unanswered command after
   * a reconnect, and the node it reaches may have restarted empty meanwhile
   * (before INFO tells this guard so).
   */
  private connectionEpoch = 0

  /** The current connection, to be given back to `counts` with the answer. */
  get epoch(): number {
    return this.connectionEpoch
  }

  /** The connection dropped: until its run_id is checked again nothing from this node counts. */
  suspect(why: string): void {
    this.connectionEpoch += 1
    if (!this.verified) return
    this.verified = false
    this.publish('down', why)
    this.lastState = 'unverified'
  }

  /** INFO server after connecting or reconnecting. */
  learn(runId: string, uptimeMs: number): void {
    const first = this.runId === undefined
    if (first || runId !== this.runId) {
      this.restartedAt = monotonicNow() - uptimeMs
      this.seenLive = !first
    }
    this.runId = runId
    this.verified = true
  }

  /**
   * Whether an answer arriving now to a request sent at connection `sentEpoch`
   * counts: the node counts now and the connection never dropped in between,
   * so every hold it had since its restart is known to this guard.
   */
  counts(sentEpoch: number, largestTtlMs: number): boolean {
    return sentEpoch === this.connectionEpoch && this.check(largestTtlMs).state === 'counted'
  }

  /** Whether this node's votes count now, with `largestTtlMs` the largest ttl this client uses. */
  check(largestTtlMs: number): GuardState {
    const state = this.evaluate(largestTtlMs)
    if (state.state !== this.lastState) {
      this.lastState = state.state
      if (state.state === 'excluded') this.publish('excluded', state.reason)
      else if (state.state === 'counted') this.publish('counted', 'answers and counts toward a majority')
    }
    return state
  }

  private evaluate(largestTtlMs: number): GuardState {
    if (!this.verified) return UNVERIFIED
    if (this.restartedAt === undefined) return COUNTED
    const windowMs = this.seenLive ? Math.max(this.maxTtlMs, largestTtlMs) : this.maxTtlMs
    const untilMs = this.restartedAt + windowMs
    const left = untilMs - monotonicNow()
    if (left <= 0) return COUNTED
    return {
      state: 'excluded',
      untilMs,
      reason: `restarted ${Math.round(monotonicNow() - this.restartedAt)} ms ago and may have lost live locks; ` +
        `not counted for another ${Math.ceil(left)} ms (the largest ttl in use)`,
    }
  }

  private publish(state: NodeEvent['state'], reason: string): void {
    if (nodeChannel.hasSubscribers) nodeChannel.publish({ store: 'redlock', node: this.node, state, reason } satisfies NodeEvent)
  }
}

/** run_id and uptime from an INFO server reply. */
export function parseServerInfo(info: string): { runId: string; uptimeMs: number } {
  const runId = /^run_id:(\w+)/m.exec(info)?.[1]
  const uptime = /^uptime_in_seconds:(\d+)/m.exec(info)?.[1]
  if (!runId || uptime === undefined) throw new Error('INFO server has no run_id / uptime_in_seconds')
  return { runId, uptimeMs: Number(uptime) * 1000 }
}
