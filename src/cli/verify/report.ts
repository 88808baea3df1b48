/** What `baton verify` found: the report, its exit status, and how it reads on a terminal. */
import { parseStoreUrl } from '../../internal-api.js'
import { EXIT } from '../common.js'
import type { Primitive } from '../../chaos/history.js'
import type { FaultEffect } from './history.js'
import type { Workload } from './protocol.js'

/** The store kind the chaos suite's known exceptions name ("redis-sentinel", …), from the URL's scheme. */
export function storeKindOf(url: string): string {
  const scheme = parseStoreUrl(url).scheme
  const kinds: Record<string, string> = {
    rediss: 'redis', 'redis+sentinel': 'redis-sentinel', 'redis+cluster': 'redis-cluster', postgresql: 'postgres',
    mariadb: 'mysql', etcds: 'etcd', zk: 'zookeeper', https: 'http',
  }
  return kinds[scheme] ?? scheme
}

export interface VerifyReport {
  store: string
  /** The store kind the known exceptions name. */
  storeKind: string
  workload: Workload
  /** The names' prefix. */
  name: string
  seed: number
  primitives: Primitive[]
  workers: number
  seconds: number
  ttlMs: number
  fencing: boolean
  holds: number
  handovers: number
  writesAccepted: number
  staleWritesRefused: number
  /** Operations by primitive and kind, with how they ended. */
  ops: Record<string, { ok: number; busy: number; error: number }>
  /** Each fault with what it did. `at`, `healedAt`: ms from the start. */
  faults: { kind: string; target: string; at: number; healedAt?: number; detail?: string; effect: FaultEffect }[]
  acquireWaitMs: { p50: number; p99: number; max: number }
  /**
   * Safety violations (the chaos checker's properties: two-holders,
   * token-order, stale-write, lost-update, …), with the tokens of the holds
   * involved, and, where a documented limit of this store kind covers it,
   * that limit: said beside it, never excused.
   */
  violations: { kind: string; at: number; evidence: string; tokens: string[]; knownLimit?: string }[]
  /** Timing-dependent observations (a waiter not granted while the name looked free): not a verdict. */
  warnings: string[]
  /** Stretches when the store did not answer a worker's calls (ms from the start): unavailability, not violations. */
  unavailable: { from: number; to: number; recoveredAt?: number; calls: number; workers: number[]; during: string[]; message: string }[]
  /**
   * Faults after which nothing was granted within the progress window. A
   * stall is liveness, not safety: a busy machine causes it as readily as a
   * store, so it is reported apart from the violations (exit 69, not 1).
   */
  stalls: { kind: string; evidence: string }[]
  /** Workers that died for a reason of their own (not our kill, not the store): defects of the client. Each was replaced. */
  workerFailures: string[]
  /** Calls that failed in a worker this run paused, during the pause or within two leases after it: the pause's doing, not the store's. */
  failedCallsAfterOwnPause: number
  /** Where the run's whole history was written (with --history, or after a violation). */
  historyFile?: string
  /** No violation and no worker failure. */
  passed: boolean
}

/** The exit status of a report: a violation or a crash beats unavailability. */
export function exitStatusOf(report: Pick<VerifyReport, 'passed' | 'unavailable' | 'stalls'>): number {
  if (!report.passed) return EXIT.failure
  return report.unavailable.length > 0 || report.stalls.length > 0 ? EXIT.unavailable : EXIT.ok
}

/**
 * One look at the store before any worker starts: a URL the library can not
 * use (exit 2) or a store that does not answer (exit 69) is said at once, in
 * one line, instead of as every worker's failure at the end of the run.
 * Returns the primitives it offers.
 */

export function formatReport(r: VerifyReport): string {
  const s = (ms: number) => `+${(ms / 1000).toFixed(3)} s`
  const count = (kind: string) => r.faults.filter((f) => f.kind === kind).length
  const ops = Object.entries(r.ops).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.ok}${v.busy ? `/${v.busy} busy` : ''}${v.error ? `/${v.error} err` : ''}`)
  const lines = [
    `baton verify: ${r.store} (${r.storeKind}), workload ${r.workload}${r.workload === 'counter' ? '' : ` (${r.primitives.join(', ')}), seed ${r.seed}`}, names "${r.name}/…", ` +
      `${r.workers} workers, ${r.seconds} s, ttl ${r.ttlMs} ms, fencing ${r.fencing ? 'on' : 'OFF'}`,
    `holds ${r.holds}, hand-overs ${r.handovers}, writes accepted ${r.writesAccepted}, stale reads and writes refused ${r.staleWritesRefused}`,
    `ops: ${ops.join(', ') || 'none'}`,
    `faults: ${count('pause')} pauses past the ttl, ${count('kill')} kills${count('fault-cmd') ? `, ${count('fault-cmd')} runs of --fault-cmd` : ''}`,
    `acquire wait: p50 ${r.acquireWaitMs.p50} ms, p99 ${r.acquireWaitMs.p99} ms, max ${r.acquireWaitMs.max} ms`,
  ]
  for (const f of r.faults.filter((x) => x.kind === 'fault-cmd')) {
    const e = f.effect
    lines.push(`  fault-cmd at ${s(f.at)}${f.healedAt === undefined ? '' : `, done ${s(f.healedAt)}`}${f.detail ? ` (${f.detail})` : ''}: ` +
      `${e.holdsLost} hold(s) lost and signalled, ${e.violations} violation(s), ${e.failedCalls} call(s) unanswered, ` +
      (e.recoveredAfterMs === undefined ? 'no grant after it' : `next grant ${(e.recoveredAfterMs / 1000).toFixed(3)} s after it began`))
  }
  if (r.staleWritesRefused > 0) lines.push(`the resource refused ${r.staleWritesRefused} read(s)/write(s) from holders a later holder had overtaken: fencing at work`)
  if (r.unavailable.length > 0) {
    lines.push(`UNAVAILABLE: the store did not answer ${r.unavailable.length} time(s) (not a violation; nothing was checked while it did not answer)`)
    for (const o of r.unavailable) {
      lines.push(`  from ${s(o.from)} to ${s(o.to)}${o.recoveredAt === undefined ? ', no grant after it' : `, next grant ${s(o.recoveredAt)}`}: ` +
        `${o.calls} failed call(s) (${o.during.join(', ')}) by worker(s) ${o.workers.join(', ')}: ${o.message}`)
    }
  }
  if (r.stalls.length > 0) {
    lines.push(`STALLED: ${r.stalls.length} time(s) nothing was granted soon after a fault (liveness, not a violation: a busy machine does this too)`)
    for (const stall of r.stalls.slice(0, 5)) lines.push(`  ${stall.evidence}`)
  }
  if (r.warnings.length > 0) {
    lines.push(`WARNING (timing-dependent, not a verdict): ${r.warnings.length}`)
    for (const w of r.warnings.slice(0, 3)) lines.push(`  ${w}`)
  }
  if (r.failedCallsAfterOwnPause > 0) lines.push(`${r.failedCallsAfterOwnPause} call(s) failed in workers during or just after their pause: their own stall, not the store's`)
  if (r.workerFailures.length > 0) {
    lines.push(`WORKER FAILURE: ${r.workerFailures.length} worker(s) died of their own accord (each was replaced)`)
    for (const f of r.workerFailures.slice(0, 5)) lines.push(`  ${f}`)
  }
  if (r.violations.length === 0) lines.push(r.passed ? 'PASS: no violation' : 'no violation')
  else {
    lines.push(`FAIL: ${r.violations.length} violation(s)`)
    const shown = r.violations.slice(0, 20)
    for (const v of shown) {
      lines.push(`  ${v.kind} at ${s(v.at)}: ${v.evidence}`)
      if (v.knownLimit) lines.push(`    a documented limit of ${r.storeKind}: ${v.knownLimit}`)
    }
    if (r.violations.length > shown.length) lines.push(`  … and ${r.violations.length - shown.length} more (--json lists all)`)
  }
  if (r.historyFile !== undefined) lines.push(`history: ${r.historyFile}`)
  if (r.workload !== 'counter') lines.push(`replay this plan: --workload ${r.workload} --seed ${r.seed} --workers ${r.workers}`)
  return lines.join('\n')
}
