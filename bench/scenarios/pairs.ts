/**
 * Uncontended acquire+release throughput, as a reusable scenario shape:
 * one flow on one key (sequential) or N flows on N keys (parallel), for a set
 * of contenders against one baseline measured in the same runs.
 */
import { parallelPairs, sequentialPairs } from '../flows.js'
import type { ContenderSpec, PeerId } from '../peers/index.js'
import { fmtMet, fmtMs, fmtRate, fmtRatio, median, reasonOf, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, pairedRatios, runTag, withTimeout, type Outcome } from '../util.js'
import { closeEntrants, failedRuns, keyPart, medianOf, openEntrants, ready, type Entrant } from './common.js'

export interface PairsScenarioOptions {
  id: string
  /** Figure number in the summary, e.g. "1". */
  figure: string
  title: string
  notes: string
  contenders: ContenderSpec[]
  /** Ratios are against this contender (same runs). */
  baseline: PeerId
  /** The contender under test (baton or baton-memory). */
  subject: PeerId
  /** 1 = one flow on one key; N = N flows each on its own key. */
  flows: number
  /** Contenders whose N flows all loop on ONE key instead (e.g. readers of one rwlock). */
  sharedKey?: readonly PeerId[]
  /** What the summary row calls the figure (default from `flows`). */
  metric?: string
  runs: [full: number, quick: number]
  durationMs: [full: number, quick: number]
  warmupMs: [full: number, quick: number]
  /** subject ≥ minRatio × baseline. */
  minRatio: number
  /** Which store the contenders use (default redis). */
  store?: 'redis' | 'postgres' | 'mysql'
  /** Also: subject ≥ every other (non-baseline) contender. */
  beatEveryPeer?: boolean
}

interface PairStats {
  rate: number
  p50?: number
  p99?: number
}

export function pairsScenario(o: PairsScenarioOptions): Scenario {
  return {
    id: o.id,
    title: o.title,
    async run(ctx: BenchContext): Promise<ScenarioResult> {
      const runs = ctx.pick(...o.runs)
      const durationMs = ctx.pick(...o.durationMs)
      const keysOf = (e: Entrant): string[] => {
        const shared = o.sharedKey?.includes(e.spec.peer) ?? false
        return Array.from({ length: o.flows }, (_, i) => `bench/${runTag}/${o.id}/${keyPart(e.id)}/${shared ? 0 : i}`)
      }
      const measure = async (e: Entrant, ms: number): Promise<PairStats> => {
        const contender = e.contender!
        if (o.flows === 1) {
          const r = await sequentialPairs(contender, keysOf(e)[0]!, ms)
          return { rate: (r.pairs / r.elapsedMs) * 1000, p50: r.latencies!.percentile(50), p99: r.latencies!.percentile(99) }
        }
        const r = await parallelPairs(contender, keysOf(e), ms)
        return { rate: (r.pairs / r.elapsedMs) * 1000 }
      }

      const url = o.store === 'postgres' ? await ctx.postgresUrl() : o.store === 'mysql' ? await ctx.mysqlUrl() : ctx.redisUrl
      const entrants = await openEntrants(o.contenders, url)
      let results: Map<string, Outcome<PairStats>[]>
      try {
        const warmupMs = ctx.pick(...o.warmupMs)
        for (const e of ready(entrants)) {
          try {
            await withTimeout(measure(e, warmupMs), warmupMs + 10_000, 'warm-up')
          } catch (error) {
            e.setupError = reasonOf(error)
            ctx.log(`  ${e.id}: failed: ${e.setupError}`)
          }
        }
        results = await alternate(runs, ready(entrants), (e) => measure(e, durationMs), {
          timeoutMs: durationMs + 10_000,
          log: ctx.log,
        })
      } finally {
        await closeEntrants(entrants)
      }
      for (const e of entrants) if (e.setupError) results.set(e.id, failedRuns(runs, e.setupError))

      const baseline = entrants.find((e) => e.spec.peer === o.baseline)!
      const subject = entrants.find((e) => e.spec.peer === o.subject)!
      const peers = entrants.filter((e) => e !== baseline && e !== subject)
      const rate = (s: PairStats): number => s.rate
      const vsBaseline = median(pairedRatios(results.get(subject.id), results.get(baseline.id), rate))
      const vsPeer = new Map(peers.map((p) => [p.id, median(pairedRatios(results.get(subject.id), results.get(p.id), rate))]))
      const comparablePeers = peers.filter((p) => Number.isFinite(vsPeer.get(p.id)!))
      const beatsPeers = comparablePeers.every((p) => vsPeer.get(p.id)! >= 1)
      const subjectMet = Number.isFinite(vsBaseline)
        ? vsBaseline >= o.minRatio && (!o.beatEveryPeer || beatsPeers)
        : undefined
      const targetText = `≥ ${o.minRatio}× ${baseline.label}${o.beatEveryPeer ? ' and ≥ every peer' : ''}`

      const sequential = o.flows === 1
      const headers = [
        'contender', 'pairs/s', ...(sequential ? ['p50 pair', 'p99 pair'] : []),
        `÷ ${o.baseline}`, `${o.subject} ÷ this`, 'target', 'met?', 'notes',
      ]
      const rows = entrants.map((e) => {
        const outcomes = results.get(e.id)
        const note = failureNote(outcomes)
        if (note.startsWith('failed')) return [e.label, note, ...(sequential ? ['', ''] : []), '', '', '', '', '']
        const toBaseline = median(pairedRatios(outcomes, results.get(baseline.id), rate))
        const subjectOverThis = e === subject ? NaN : median(pairedRatios(results.get(subject.id), outcomes, rate))
        return [
          e.label,
          fmtRate(medianOf(outcomes, rate)),
          ...(sequential ? [fmtMs(medianOf(outcomes, (s) => s.p50!)), fmtMs(medianOf(outcomes, (s) => s.p99!))] : []),
          e === baseline ? 'baseline' : fmtRatio(toBaseline),
          e === subject ? '' : fmtRatio(subjectOverThis),
          e === subject ? targetText : '',
          e === subject ? fmtMet(subjectMet) : '',
          [note, countersNote(e)].filter(Boolean).join('; '),
        ]
      })

      const metric = o.metric ?? (sequential ? 'uncontended pairs/s (1 flow, 1 key)' : `pairs/s, ${o.flows} flows on own keys`)
      const subjectRate = fmtRate(medianOf(results.get(subject.id), rate))
      const summary: SummaryRow[] = [{
        figure: `${o.figure}. ${metric}`,
        baton: subjectRate,
        other: `${baseline.label}: ${fmtRate(medianOf(results.get(baseline.id), rate))}`,
        ratio: fmtRatio(vsBaseline),
        target: `≥ ${o.minRatio}×`,
        met: Number.isFinite(vsBaseline) ? vsBaseline >= o.minRatio : undefined,
      }]
      if (o.beatEveryPeer) {
        const best = [...comparablePeers].sort((a, b) => vsPeer.get(a.id)! - vsPeer.get(b.id)!)[0]
        summary.push({
          figure: `${o.figure}. ${metric} vs peers`,
          baton: subjectRate,
          other: best ? `best peer ${best.label}: ${fmtRate(medianOf(results.get(best.id), rate))}` : 'no peer finished',
          ratio: best ? fmtRatio(vsPeer.get(best.id)!) : '—',
          target: '≥ 1× every peer',
          met: best ? beatsPeers : undefined,
        })
      }
      const markdown = [
        `## ${o.title}`,
        '',
        o.notes,
        `${runs} runs × ${durationMs} ms per contender, order rotated each run; medians over runs; ratios are medians of per-run ratios.`,
        '',
        table(headers, rows),
      ].join('\n')
      return { markdown, summary }
    },
  }
}

function countersNote(e: Entrant): string {
  const counters = e.contender?.counters?.() ?? {}
  return Object.entries(counters).filter(([, n]) => n > 0).map(([k, n]) => `${k}: ${n}`).join(', ')
}
