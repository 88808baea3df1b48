/** What the `baton verify` test files share: running the shipped bin and judging a run that must pass. */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { TIMING_SCALE } from '../harness/timing.js'
import { startBaton } from './baton-cli.js'
import type { VerifyReport } from '../../src/cli/verify/report.js'
import type { History, HistoryEvent } from '../../src/chaos/history.js'

/** A run's length, scaled: what must happen within it (start-up, a hand-over after an outage) takes longer on a busy machine. */
export const seconds = (n: number): string => String(Math.ceil(n * TIMING_SCALE))

export const FAULTY = ['--workers', '3', '--seconds', seconds(10), '--ttl', '1s', '--hold', '100ms', '--pause', '2500ms', '--kill', '3500ms', '--json']

export async function verify(url: string, args: string[] = FAULTY, env: Record<string, string | undefined> = {}): Promise<{ code: number | null; report: VerifyReport; stderr: string }> {
  const { code, stdout, stderr } = await startBaton(['verify', '--store', url, ...args], env).finished
  let report: VerifyReport
  try {
    report = JSON.parse(stdout) as VerifyReport
  } catch {
    throw new Error(`verify printed no JSON report (exit ${code}): ${stdout}\n${stderr}`)
  }
  return { code, report, stderr }
}


/**
 * A violation's evidence in full, for the assertion's message: every event of
 * the leases its evidence names (grants, renewals, probes, losses, the calls
 * that made them) and the faults, from the history the run kept. A failure in
 * CI is then decided from its log, without the machine's files.
 */
export function historyOfViolations(report: VerifyReport): string {
  if (report.violations.length === 0 || report.historyFile === undefined || !existsSync(report.historyFile)) return ''
  const history = JSON.parse(readFileSync(report.historyFile, 'utf8')) as History
  const leases = new Set(report.violations.flatMap((v) => v.evidence.match(/\bp\d+c\d+l\d+\b/g) ?? []))
  const field = (e: HistoryEvent, key: 'lease' | 'op') => String((e as unknown as Record<string, unknown>)[key] ?? '')
  const ops = new Set(history.events.flatMap((e) => leases.has(field(e, 'lease')) ? [field(e, 'op')] : []))
  ops.delete('')
  const wanted = (e: HistoryEvent) => e.type === 'fault' || leases.has(field(e, 'lease')) || ops.has(field(e, 'op'))
  const at = (ms: number) => `+${((ms - history.startedAt) / 1000).toFixed(3)}`
  const lines = history.events.filter(wanted).slice(0, 300).map((e) => `${at(e.at)} ${JSON.stringify({ ...e, at: undefined })}`)
  return `\nthe history of ${[...leases].join(', ')} (${report.historyFile}):\n${lines.join('\n')}`
}

/** Safety held. A stall after a fault (liveness, which load causes as readily as a store) may turn exit 0 into 69, never into 1. */
export function assertPassed(code: number | null, report: VerifyReport): void {
  assert.deepEqual(report.violations, [], `no violation (faults: ${JSON.stringify(report.faults)})${historyOfViolations(report)}`)
  if (code === 69) assert.ok(report.stalls.length + report.unavailable.length > 0, `exit 69 says why: ${JSON.stringify(report)}`)
  else assert.equal(code, 0, `worker failures: ${JSON.stringify(report.workerFailures)}`)
  assert.equal(report.passed, true)
  assert.ok(report.holds >= 3 && report.writesAccepted > 0, `work was done: ${report.holds} holds`)
  assert.ok(report.faults.some((f) => f.kind === 'pause') && report.faults.some((f) => f.kind === 'kill'), 'faults were injected')
}
