/**
 * 3. Hand-over: 16 flows in 2 OS processes on ONE key. Each flow loops
 * acquire (wait long) → hold 1 ms → release → re-acquire at once. Grants and
 * releases are stamped with performance.timeOrigin + performance.now(), a
 * clock both processes share, and merged here.
 */
import { analyzeGrants, type HandoffStats } from '../flows.js'
import { spec, specId, specLabel, type ContenderSpec } from '../peers/index.js'
import { fmtMet, fmtMs, fmtNum, fmtRate, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, type Outcome } from '../util.js'
import { keyPart, medianOf } from './common.js'
import { forkedFlows, mergeCounts, noHandoffReason } from './forked.js'

/** The figure-3 setup, reused by the fair-mutex hand-over (figure 7). */
export const FLOWS = 16
export const PROCESSES = 2
export const HOLD_MS = 1
export const DRAIN_MS = 8000

const TARGET_RATIO = 1.5
/** Of the raw spin's hand-overs/s: the ceiling of client-side waiting, measured in the same run. */
const TARGET_SPIN_RATIO = 0.9
const TARGET_P50_MS = 0.25
const TARGET_JAIN = 0.9

export interface Entry {
  readonly id: string
  readonly label: string
  readonly spec: ContenderSpec
}

/** One measured run of a contender in the hand-over setup. */
export interface HandoffRun {
  stats: HandoffStats
  errors: Record<string, number>
  counters: Record<string, number>
  stuckFlows: number
}

export const handoff: Scenario = {
  id: 'handoff',
  title: `3. Hand-over: ${FLOWS} flows in ${PROCESSES} processes on one key (Redis)`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 1)
    const windowMs = ctx.pick(2000, 1000)
    const warmupMs = ctx.pick(300, 200)
    const specs = [
      spec('baton'),
      spec('raw', 'fast'),
      spec('redlock', 'fast'), spec('redlock', 'default'),
      spec('sesame-redlock', 'fast'), spec('sesame-redlock', 'default'),
      spec('redis-semaphore', 'fast'), spec('redis-semaphore', 'default'),
    ]
    const entries: Entry[] = specs.map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
    const results = await measureHandoffs(ctx, entries, 'handoff', { runs, windowMs, warmupMs })
    return report(entries, results, runs, windowMs)
  },
}

function report(entries: Entry[], results: Map<string, Outcome<HandoffRun>[]>, runs: number, windowMs: number): ScenarioResult {
  const baton = entries.find((e) => e.spec.peer === 'baton')!
  // The raw spin is the baseline, not a peer: no library waits that way.
  const spin = entries.find((e) => e.spec.peer === 'raw')!
  const peers = entries.filter((e) => e !== baton && e !== spin)
  const batonRuns = results.get(baton.id)!
  const rate = (r: HandoffRun): number => r.stats.handoffsPerSec

  // Per run: baton ÷ this peer, and baton ÷ the best peer of that run.
  const ratioTo = (peer: Entry): number[] => {
    const peerRuns = results.get(peer.id)!
    return batonRuns.flatMap((b, i) => {
      const p = peerRuns[i]
      return b.ok && p?.ok ? [rate(b.value) / rate(p.value)] : []
    })
  }
  const vsBest = batonRuns.flatMap((b, i) => {
    if (!b.ok) return []
    const best = Math.max(...peers.map((p) => results.get(p.id)![i]).flatMap((o) => (o?.ok ? [rate(o.value)] : [])))
    return Number.isFinite(best) && best > 0 ? [rate(b.value) / best] : []
  })
  const bestPeer = [...peers].sort((a, b) => (medianOf(results.get(b.id), rate) || 0) - (medianOf(results.get(a.id), rate) || 0))[0]!
  const ratioVsBest = median(vsBest)
  const ratioVsSpin = median(ratioTo(spin))
  const batonP50 = medianOf(batonRuns, (r) => r.stats.releaseToNextP50)
  const batonJain = medianOf(batonRuns, (r) => r.stats.jain)
  const met = {
    ratio: Number.isFinite(ratioVsBest) ? ratioVsBest >= TARGET_RATIO : undefined,
    spin: Number.isFinite(ratioVsSpin) ? ratioVsSpin >= TARGET_SPIN_RATIO : undefined,
    p50: Number.isFinite(batonP50) ? batonP50 <= TARGET_P50_MS : undefined,
    jain: Number.isFinite(batonJain) ? batonJain >= TARGET_JAIN : undefined,
  }
  const allMet = Object.values(met).some((m) => m === undefined) ? undefined : Object.values(met).every(Boolean)

  const headers = ['contender', ...HANDOFF_HEADERS, 'baton ÷ this', 'target', 'met?', 'notes']
  const rows = entries.map((e) => {
    const outcomes = results.get(e.id)!
    const note = failureNote(outcomes)
    if (note.startsWith('failed')) return [e.label, note]
    const isBaton = e === baton
    return [
      e.label,
      ...handoffCells(outcomes),
      isBaton ? '' : fmtRatio(median(ratioTo(e))),
      isBaton ? `≥ ${TARGET_RATIO}× best peer; ≥ ${TARGET_SPIN_RATIO}× raw spin; p50 ≤ ${TARGET_P50_MS} ms; Jain ≥ ${TARGET_JAIN}` : '',
      isBaton ? `${fmtMet(allMet)} (${fmtRatio(ratioVsBest)} best peer, ${fmtRatio(ratioVsSpin)} raw spin)` : '',
      [note, ...handoffNotes(oks(outcomes))].filter(Boolean).join('; '),
    ]
  })

  const bestRuns = results.get(bestPeer.id)
  const summary: SummaryRow[] = [
    {
      figure: `3. hand-overs/s, ${FLOWS} flows / ${PROCESSES} processes, 1 key`,
      baton: fmtRate(medianOf(batonRuns, rate)),
      other: `best peer ${bestPeer.label}: ${fmtRate(medianOf(bestRuns, rate))}`,
      ratio: fmtRatio(ratioVsBest),
      target: `≥ ${TARGET_RATIO}× best peer`,
      met: met.ratio,
    },
    {
      figure: '3. hand-overs/s ÷ raw spin (SET NX retried at once)',
      baton: fmtRate(medianOf(batonRuns, rate)),
      other: `raw spin: ${fmtRate(medianOf(results.get(spin.id), rate))}`,
      ratio: fmtRatio(ratioVsSpin),
      target: `≥ ${TARGET_SPIN_RATIO}× raw spin`,
      met: met.spin,
    },
    {
      figure: '3. release → next holder, p50',
      baton: fmtMs(batonP50),
      other: `${bestPeer.label}: ${fmtMs(medianOf(bestRuns, (r) => r.stats.releaseToNextP50))}`,
      ratio: '—',
      target: `≤ ${TARGET_P50_MS} ms`,
      met: met.p50,
    },
    {
      figure: `3. Jain's index of grants over ${FLOWS} flows`,
      baton: fmtNum(batonJain, 3),
      other: `${bestPeer.label}: ${fmtNum(medianOf(bestRuns, (r) => r.stats.jain), 3)}`,
      ratio: '—',
      target: `≥ ${TARGET_JAIN}`,
      met: met.jain,
    },
  ]
  const markdown = [
    `## 3. Hand-over: ${FLOWS} flows in ${PROCESSES} processes on one key (Redis)`,
    '',
    `${FLOWS} flows split over ${PROCESSES} forked OS processes (one client per process and contender), all on ONE key; each flow loops `
    + `acquire (wait up to 30 s) → hold ${HOLD_MS} ms (setTimeout) → release → re-acquire at once. `
    + 'A hand-over is a grant to another flow than the previous holder (a flow re-taking its own lock does not count). '
    + 'release→next: release call start of holder k → grant seen by holder k+1 (hand-overs only); wait: acquire call start → grant. '
    + 'Jain\'s index is over the grant counts of all 16 flows (1 = perfectly even). '
    + `Peers run at their most aggressive setting (retry every 1 ms) and at their defaults; the raw spin (SET NX tried again as soon as the last answer came) is the baseline. `
    + `${runs} runs × ${windowMs} ms window per contender, order rotated each run; medians over runs; "baton ÷ this" is the median of per-run ratios.`,
    '',
    table(headers, rows),
  ].join('\n')
  return { markdown, summary }
}

/** Table columns of handoffCells(). */
export const HANDOFF_HEADERS = [
  'hand-overs/s', 'grants/s', 'release→next p50', 'release→next p99', 'wait p99', 'Jain', 'min grants/flow (worst run)',
] as const

/** A contender's hand-over figures (medians over its successful runs), in HANDOFF_HEADERS order. */
export function handoffCells(outcomes: readonly Outcome<HandoffRun>[]): string[] {
  const ok = oks(outcomes)
  return [
    fmtRate(medianOf(outcomes, (r) => r.stats.handoffsPerSec)),
    fmtRate(medianOf(outcomes, (r) => r.stats.grantsPerSec)),
    fmtMs(medianOf(outcomes, (r) => r.stats.releaseToNextP50)),
    fmtMs(medianOf(outcomes, (r) => r.stats.releaseToNextP99)),
    fmtMs(medianOf(outcomes, (r) => r.stats.waitP99)),
    fmtNum(medianOf(outcomes, (r) => r.stats.jain), 3),
    String(Math.min(...ok.map((r) => r.stats.minGrants))),
  ]
}

/** Counters, errors and warnings (overlapping holds, flows stuck) over the successful runs. */
export function handoffNotes(ok: readonly HandoffRun[]): string[] {
  const errors = mergeCounts(ok.map((r) => r.errors))
  const counters = mergeCounts(ok.map((r) => r.counters))
  const overlaps = ok.reduce((n, r) => n + r.stats.overlaps, 0)
  const stuck = ok.reduce((n, r) => n + r.stuckFlows, 0)
  return [
    ...Object.entries(counters).filter(([, n]) => n > 0).map(([k, n]) => `${k}: ${n}×`),
    ...Object.entries(errors).map(([k, n]) => `${n}× error: ${k}`),
    overlaps > 0 ? `⚠ ${overlaps} grants before the previous release started` : '',
    stuck > 0 ? `⚠ ${stuck} flows still waiting ${DRAIN_MS / 1000} s after the window` : '',
  ].filter(Boolean)
}

/**
 * Figure 3's measurement, shared by every store's hand-over scenario: the
 * contenders' flows in PROCESSES processes on one key, runs alternated
 * between contenders, each run failing when nobody was handed the lock.
 */
export async function measureHandoffs(
  ctx: BenchContext, entries: readonly Entry[], id: string,
  window: { runs: number; windowMs: number; warmupMs: number },
): Promise<Map<string, Outcome<HandoffRun>[]>> {
  const { runs, windowMs, warmupMs } = window
  const forked = forkedFlows(ctx, { processes: PROCESSES, flows: FLOWS, holdMs: HOLD_MS, drainMs: DRAIN_MS, warmupMs, windowMs })
  const measure = async (entry: Entry, run: number): Promise<HandoffRun> => {
    const r = await forked.run(entry.spec, `bench/${runTag}/${id}/${keyPart(entry.id)}/${run}`)
    const stats = analyzeGrants(r.grants, forked.flowIds, r.from, r.to)
    if (stats.handoffs === 0) throw new Error(noHandoffReason(windowMs, stats.grants, r))
    return { stats, errors: r.errors, counters: r.counters, stuckFlows: r.stuckFlows }
  }
  try {
    return await alternate(runs, [...entries], measure, { timeoutMs: windowMs + warmupMs + DRAIN_MS + 30_000, log: ctx.log })
  } finally {
    await forked.close()
  }
}
