/**
 * 7. Fair mutex hand-over: figure 3's setup (16 flows in 2 OS processes on
 * ONE key, hold 1 ms, re-acquire at once) for baton's `fair: true` mutex and
 * its default (not fair) mutex in the same runs, plus whether the grants came
 * in arrival order.
 */
import { analyzeGrants, arrivalOrder, grantRows, type ArrivalOrderStats } from '../flows.js'
import { spec, specId, specLabel, type ContenderSpec } from '../peers/index.js'
import { fmtMet, fmtMs, fmtNum, fmtRate, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, pairedRatios, runTag, type Outcome } from '../util.js'
import { keyPart, medianOf } from './common.js'
import { forkedFlows, noHandoffReason } from './forked.js'
import { DRAIN_MS, FLOWS, HANDOFF_HEADERS, handoffCells, handoffNotes, HOLD_MS, PROCESSES, type HandoffRun } from './handoff.js'

const TARGET_RATIO = 0.8
const TARGET_P50_MS = 0.5
/** "Jain ≈ 1.0". */
const TARGET_JAIN = 0.99
/** "Arrival order exact": share of grants (median over runs) that came exactly one round (FLOWS grants) after the flow's previous one. */
const TARGET_IN_TURN = 0.99
/** An overtake: granted while a flow whose acquire call started more than this earlier still waited. */
const OVERTAKE_SLACK_MS = 1

interface Entry {
  readonly id: string
  readonly label: string
  readonly spec: ContenderSpec
}

interface FairRun extends HandoffRun {
  order: ArrivalOrderStats
}

export const fairHandoff: Scenario = {
  id: 'fair-handoff',
  title: `7. Fair mutex hand-over: ${FLOWS} flows in ${PROCESSES} processes on one key (Redis)`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 1)
    const windowMs = ctx.pick(1500, 1000)
    const warmupMs = ctx.pick(300, 200)
    const entries: Entry[] = [spec('baton-fair'), spec('baton')].map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
    const forked = forkedFlows(ctx, { processes: PROCESSES, flows: FLOWS, holdMs: HOLD_MS, drainMs: DRAIN_MS, warmupMs, windowMs })

    const measure = async (entry: Entry, run: number): Promise<FairRun> => {
      const key = `bench/${runTag}/fair-handoff/${keyPart(entry.id)}/${run}`
      const r = await forked.run(entry.spec, key)
      const stats = analyzeGrants(r.grants, forked.flowIds, r.from, r.to)
      if (stats.handoffs === 0) throw new Error(noHandoffReason(windowMs, stats.grants, r))
      const order = arrivalOrder(grantRows(r.grants), FLOWS, r.from, r.to, OVERTAKE_SLACK_MS)
      return { stats, order, errors: r.errors, counters: r.counters, stuckFlows: r.stuckFlows }
    }

    let results: Map<string, Outcome<FairRun>[]>
    try {
      results = await alternate(runs, entries, measure, { timeoutMs: windowMs + warmupMs + DRAIN_MS + 30_000, log: ctx.log })
    } finally {
      await forked.close()
    }
    return report(entries, results, runs, windowMs)
  },
}

function report(entries: Entry[], results: Map<string, Outcome<FairRun>[]>, runs: number, windowMs: number): ScenarioResult {
  const [fair, plain] = entries as [Entry, Entry]
  const fairRuns = results.get(fair.id)!
  const plainRuns = results.get(plain.id)!
  const rate = (r: FairRun): number => r.stats.handoffsPerSec
  const p50 = (r: FairRun): number => r.stats.releaseToNextP50
  const jain = (r: FairRun): number => r.stats.jain
  const inTurn = (r: FairRun): number => r.order.inTurn
  const ratio = median(pairedRatios(fairRuns, plainRuns, rate))
  const fairP50 = medianOf(fairRuns, p50)
  const fairJain = medianOf(fairRuns, jain)
  const pct = (v: number): string => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : '—')
  const fairInTurn = medianOf(fairRuns, inTurn)
  const worstInTurn = (outcomes: Outcome<FairRun>[]): number => Math.min(...oks(outcomes).map(inTurn))
  const overtakes = (outcomes: Outcome<FairRun>[]): number => oks(outcomes).reduce((n, r) => n + r.order.overtakes, 0)
  const orderCell = (outcomes: Outcome<FairRun>[]): string =>
    `${pct(medianOf(outcomes, inTurn))} (worst run ${pct(worstInTurn(outcomes))}), ${overtakes(outcomes)} overtakes in ${oks(outcomes).length} runs`
  const check = (value: number, ok: (v: number) => boolean): boolean | undefined => (Number.isFinite(value) ? ok(value) : undefined)
  const met = {
    ratio: check(ratio, (v) => v >= TARGET_RATIO),
    p50: check(fairP50, (v) => v <= TARGET_P50_MS),
    jain: check(fairJain, (v) => v >= TARGET_JAIN),
    order: check(fairInTurn, (v) => v >= TARGET_IN_TURN),
  }
  const allMet = Object.values(met).some((m) => m === undefined) ? undefined : Object.values(met).every(Boolean)

  const headers = [
    'contender', ...HANDOFF_HEADERS, 'grants in turn (worst run)', 'overtakes (all runs)', 'fair ÷ this', 'target', 'met?', 'notes',
  ]
  const rows = entries.map((e) => {
    const outcomes = results.get(e.id)!
    const note = failureNote(outcomes)
    if (note.startsWith('failed')) return [e.label, note]
    const ok = oks(outcomes)
    const isFair = e === fair
    return [
      e.label,
      ...handoffCells(outcomes),
      `${pct(medianOf(outcomes, inTurn))} (${pct(worstInTurn(outcomes))})`,
      String(overtakes(outcomes)),
      isFair ? '' : fmtRatio(median(pairedRatios(fairRuns, outcomes, rate))),
      isFair ? `≥ ${TARGET_RATIO}× not fair; p50 ≤ ${TARGET_P50_MS} ms; Jain ≥ ${TARGET_JAIN}; ≥ ${pct(TARGET_IN_TURN)} in turn` : '',
      isFair ? fmtMet(allMet) : '',
      [note, ...handoffNotes(ok)].filter(Boolean).join('; '),
    ]
  })

  const figure = '7. fair mutex'
  const summary: SummaryRow[] = [
    {
      figure: `${figure} hand-overs/s, ${FLOWS} flows / ${PROCESSES} processes, 1 key`,
      baton: fmtRate(medianOf(fairRuns, rate)),
      other: `${plain.label}: ${fmtRate(medianOf(plainRuns, rate))}`,
      ratio: fmtRatio(ratio),
      target: `≥ ${TARGET_RATIO}× not fair`,
      met: met.ratio,
    },
    {
      figure: `${figure} release → next holder, p50`,
      baton: fmtMs(fairP50),
      other: `${plain.label}: ${fmtMs(medianOf(plainRuns, p50))}`,
      ratio: '—',
      target: `≤ ${TARGET_P50_MS} ms`,
      met: met.p50,
    },
    {
      figure: `${figure} Jain's index of grants over ${FLOWS} flows`,
      baton: fmtNum(fairJain, 3),
      other: `${plain.label}: ${fmtNum(medianOf(plainRuns, jain), 3)}`,
      ratio: '—',
      target: `≥ ${TARGET_JAIN}`,
      met: met.jain,
    },
    {
      figure: `${figure} grants in arrival order (in turn)`,
      baton: orderCell(fairRuns),
      other: `${plain.label}: ${orderCell(plainRuns)}`,
      ratio: '—',
      target: `≥ ${pct(TARGET_IN_TURN)}`,
      met: met.order,
    },
  ]
  const markdown = [
    `## ${fairHandoff.title}`,
    '',
    `Figure 3's setup for \`baton.mutex(key, { ttl: '10s', fair: true })\` and for the default (not fair) baton mutex, alternating in the same runs: `
    + `${FLOWS} flows split over ${PROCESSES} forked OS processes, all on ONE key; each flow loops acquire (wait up to 30 s) → hold ${HOLD_MS} ms → release → re-acquire at once. `
    + 'Columns as in figure 3. '
    + `Arrival order: every flow re-joins the line right after its release, so strict arrival order cycles through all ${FLOWS} flows; `
    + `"grants in turn" is the share of a flow's grants in the window that came exactly ${FLOWS} grants after its previous one in the global grant sequence (warm-up grants count for the positions). `
    + `"overtakes" counts grants made while another flow whose acquire call had started more than ${OVERTAKE_SLACK_MS} ms earlier was still waiting (client-side stamps, so a stalled event loop can show up here too). `
    + 'A grant out of turn with no overtake means a flow re-joined the line late (its acquire call started after others had already re-joined), not that the lock skipped anyone. '
    + `${runs} runs × ${windowMs} ms window per contender, order rotated each run; medians over runs; "fair ÷ this" is the median of per-run ratios.`,
    '',
    table(headers, rows),
  ].join('\n')
  return { markdown, summary }
}
