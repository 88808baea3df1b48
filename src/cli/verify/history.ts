/**
 * What `baton verify` reads from a run's history besides the checker's
 * safety verdict (src/chaos/checker.ts): when the store did not answer
 * (unavailability), whether work went on after each fault (liveness), and
 * what each fault did. None of these is a violation.
 *
 * Every time is milliseconds of the machine's monotonic clock (historyNow(),
 * clock.ts), whichever process stamped it.
 */
import type { Finding } from '../../chaos/checker.js'
import type { Fault, HistoryEvent } from '../../chaos/history.js'
import { UNAVAILABLE_CODES } from './protocol.js'

/** A call a worker made that the store did not answer (BACKEND_UNAVAILABLE, QUORUM_NOT_REACHED, …): not a violation. */
export interface Unavailable {
  readonly worker: number
  readonly at: number
  /** What the call was: connect, a kind of operation ("acquire", "release", …), or "exit" (a worker gave up). */
  readonly during: string
  readonly message: string
}

/** Calls the store did not answer, close together in time, as one stretch. */
export interface Outage {
  readonly from: number
  /** The last call that failed. */
  readonly to: number
  /** The first grant after it, if any. */
  readonly recoveredAt?: number
  readonly calls: number
  readonly workers: readonly number[]
  readonly during: string[]
  readonly message: string
}

/** Failed calls further apart than this are separate outages. */
const OUTAGE_GAP_MS = 2000

/** The `worker N` a pause or kill fault targeted. */
export const workerTarget = (worker: number): string => `worker ${worker}`

/** The calls of a history the store did not answer (operations that completed with an unavailability code). */
export function unavailableCalls(events: readonly HistoryEvent[]): Unavailable[] {
  const kindOf = new Map<string, string>()
  const calls: Unavailable[] = []
  for (const e of events) {
    if (e.type === 'invoke') kindOf.set(e.op, e.kind)
    else if (e.type === 'complete' && e.outcome === 'error' && e.code !== undefined && UNAVAILABLE_CODES.includes(e.code)) {
      calls.push({ worker: e.process, at: e.at, during: kindOf.get(e.op) ?? 'call', message: `${e.code}: ${(e.message ?? '').replace(/^baton: /, '')}` })
    }
  }
  return calls
}

/**
 * A call that failed in a worker this run paused, during the pause or soon
 * after it: the worker's own stall (its client's session or lease lapsed
 * while it was stopped), not the store's unavailability.
 */
export function afterOwnPause(faults: readonly Fault[], event: Unavailable, afterPauseMs: number): boolean {
  return faults.some((f) => f.kind === 'pause' && f.target === workerTarget(event.worker) && event.at >= f.at && event.at <= (f.healedAt ?? Infinity) + afterPauseMs)
}

/** The failed calls as outages, in time order; calls that failed because their worker was paused (afterOwnPause) are left out. */
export function outagesOf(calls: readonly Unavailable[], grants: readonly number[], faults: readonly Fault[] = [], afterPauseMs = 0): Outage[] {
  const events = calls.filter((e) => !afterOwnPause(faults, e, afterPauseMs)).sort((a, b) => a.at - b.at)
  const sortedGrants = [...grants].sort((a, b) => a - b)
  const outages: Outage[] = []
  let group: Unavailable[] = []
  const close = () => {
    if (group.length === 0) return
    const to = group.at(-1)!.at
    outages.push({
      from: group[0]!.at,
      to,
      ...(sortedGrants.find((g) => g > to) === undefined ? {} : { recoveredAt: sortedGrants.find((g) => g > to)! }),
      calls: group.length,
      workers: [...new Set(group.map((e) => e.worker))].sort((a, b) => a - b),
      during: [...new Set(group.map((e) => e.during))],
      message: group[0]!.message,
    })
    group = []
  }
  for (const event of events) {
    if (group.length > 0 && event.at - group.at(-1)!.at > OUTAGE_GAP_MS) close()
    group.push(event)
  }
  close()
  return outages
}

/**
 * Faults after which nothing was granted within `windowMs` while the store
 * answered: a stall. Liveness, not safety (a busy machine causes it as
 * readily as a store); a fault the run ended too soon after is not judged,
 * nor one an outage overlaps (that is unavailability, reported as such).
 */
export function stallsOf(faults: readonly Fault[], grants: readonly number[], outages: readonly Outage[], options: { windowMs: number; endedAt: number }): Fault[] {
  return faults.filter((fault) => {
    const healed = fault.healedAt ?? fault.at
    const windowEnd = healed + options.windowMs
    if (windowEnd > options.endedAt) return false
    if (outages.some((o) => o.from <= windowEnd && (o.recoveredAt ?? options.endedAt) >= fault.at)) return false
    return !grants.some((g) => g > healed && g <= windowEnd)
  })
}

/** What one fault did, from its start until `afterMs` after it healed. */
export interface FaultEffect {
  /** Holds whose holder saw its lease's signal fire (lost, and told). */
  readonly holdsLost: number
  /**
   * Safety violations found in the window (two holders and the like), and
   * those spanning it: a token below one granted before the fault is seen
   * only at the name's next grant, which may come long after it healed.
   */
  readonly violations: number
  /** Calls the store did not answer in the window. */
  readonly failedCalls: number
  /** From the fault's start to the first grant after it healed and the store answered again; absent if none came. */
  readonly recoveredAfterMs?: number
}

export function effectOf(fault: Fault, events: readonly HistoryEvent[], violations: readonly Finding[], calls: readonly Unavailable[], afterMs: number): FaultEffect {
  const healed = fault.healedAt ?? fault.at
  const within = (at: number) => at >= fault.at && at <= healed + afterMs
  const failed = calls.filter((c) => within(c.at))
  const answeredFrom = Math.max(healed, ...failed.map((c) => c.at))
  const recovered = events.find((e) => e.type === 'grant' && e.at > answeredFrom)
  return {
    holdsLost: new Set(events.filter((e) => e.type === 'loss' && within(e.at)).map((e) => e.type === 'loss' ? e.lease : '')).size,
    violations: violations.filter((v) => (v.since ?? v.at) <= healed + afterMs && v.at >= fault.at).length,
    failedCalls: failed.length,
    ...(recovered === undefined ? {} : { recoveredAfterMs: Math.round(recovered.at - fault.at) }),
  }
}
