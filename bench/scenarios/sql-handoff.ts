import { analyzeGrants } from '../flows.js'
import { spec, specId, specLabel, type ContenderSpec } from '../peers/index.js'
import { fmtMet, fmtMs, fmtRate, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, type Outcome } from '../util.js'
import { keyPart, medianOf } from './common.js'
import { forkedFlows, noHandoffReason } from './forked.js'
import { DRAIN_MS, FLOWS, HANDOFF_HEADERS, handoffCells, handoffNotes, HOLD_MS, PROCESSES, type HandoffRun } from './handoff.js'

const TARGET_P50_MS = 5

export interface SqlHandoffOptions {
  readonly id: string
  /** The figure's label in the summary: P2, M2, ... */
  readonly figure: string
  /** The store's name in titles: PostgreSQL, MySQL. */
  readonly store: string
  url(ctx: BenchContext): Promise<string>
  /** How the store hands over and wakes the next holder, for the section's text. */
  readonly how: string
  /** Extra contenders beside baton and baton-fair (a baseline that polls). */
  readonly others?: readonly ContenderSpec[]
}

/** Figure 3's hand-over on a SQL store: one key, flows in forked processes, release → next holder. */
export function sqlHandoff(o: SqlHandoffOptions): Scenario {
  return {
  id: o.id,
  title: `${o.figure}. Hand-over: ${FLOWS} flows in ${PROCESSES} processes on one key (${o.store})`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 1)
    const windowMs = ctx.pick(2000, 1000)
    const warmupMs = ctx.pick(300, 200)
    const entries = [spec('baton'), spec('baton-fair'), ...(o.others ?? [])].map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
    const url = await o.url(ctx)
    const forked = forkedFlows(ctx, { processes: PROCESSES, flows: FLOWS, holdMs: HOLD_MS, drainMs: DRAIN_MS, warmupMs, windowMs, url })
    let results: Map<string, Outcome<HandoffRun>[]>
    try {
      results = await alternate(runs, entries, async (entry, run) => {
        const r = await forked.run(entry.spec, `bench/${runTag}/${o.id}/${keyPart(entry.id)}/${run}`)
        const stats = analyzeGrants(r.grants, forked.flowIds, r.from, r.to)
        if (stats.handoffs === 0) throw new Error(noHandoffReason(windowMs, stats.grants, r))
        return { stats, errors: r.errors, counters: r.counters, stuckFlows: r.stuckFlows }
      }, { timeoutMs: windowMs + warmupMs + DRAIN_MS + 30_000, log: ctx.log })
    } finally {
      await forked.close()
    }

    const summary: SummaryRow[] = []
    const rows = entries.map((e) => {
      const outcomes = results.get(e.id)!
      const note = failureNote(outcomes)
      if (note.startsWith('failed')) return [e.label, note]
      const p50 = medianOf(outcomes, (r) => r.stats.releaseToNextP50)
      const met = Number.isFinite(p50) ? p50 <= TARGET_P50_MS : undefined
      summary.push(
        {
          figure: `${o.figure}. ${e.label} hand-overs/s, ${FLOWS} flows / ${PROCESSES} processes, 1 key (${o.store})`,
          baton: fmtRate(medianOf(outcomes, (r) => r.stats.handoffsPerSec)),
          other: '', ratio: '—', target: '—', met: undefined,
        },
        {
          figure: `${o.figure}. ${e.label} release → next holder, p50 (${o.store})`,
          baton: fmtMs(p50), other: '', ratio: '—', target: `≤ ${TARGET_P50_MS} ms`, met,
        },
      )
      return [e.label, ...handoffCells(outcomes), `p50 ≤ ${TARGET_P50_MS} ms`, fmtMet(met), [note, ...handoffNotes(oks(outcomes))].filter(Boolean).join('; ')]
    })
    const markdown = [
      `## ${this.title}`,
      '',
      `Figure 3's setup on ${o.store}: ${FLOWS} flows split over ${PROCESSES} forked processes (one client each), all on ONE key, `
      + `acquire → hold ${HOLD_MS} ms → release → re-acquire. ${o.how} `
      + `${runs} runs × ${windowMs} ms window, order rotated; medians over runs.`,
      '',
      table(['contender', ...HANDOFF_HEADERS, 'target', 'met?', 'notes'], rows),
    ].join('\n')
    return { markdown, summary }
  },
}
}
