/**
 * P1-P3. baton on PostgreSQL (a private cluster, fsync on, pg_stat_statements
 * loaded): uncontended pairs against two bare UPDATE … RETURNING round trips,
 * hand-over in figure 3's setup, and database statements per hand-over with
 * 16 and 256 waiters.
 */
import pg from 'pg'
import { analyzeGrants, contendedFlows, type HandoffStats } from '../flows.js'
import { spec } from '../peers/index.js'
import { fmtMs, fmtNum, fmtRate, fmtRatio, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, sleep, wallNow, type Outcome } from '../util.js'
import { closeEntrants, medianOf, openEntrants, ready } from './common.js'
import { noHandoffReason } from './forked.js'
import { DRAIN_MS, HOLD_MS } from './handoff.js'
import { sqlHandoff } from './sql-handoff.js'
import { pairsScenario } from './pairs.js'

export const pgUncontended = pairsScenario({
  id: 'pg-uncontended',
  figure: 'P1',
  title: 'P1. Uncontended acquire+release, one key, one flow (PostgreSQL)',
  notes: 'One async flow: acquire, release, repeat, on one key. Baseline: a lock as one row, taken by one single-row '
    + '`UPDATE … RETURNING` and released by another (two round trips, two commits), on a pg Pool of 10 like baton\'s; '
    + 'baton runs one statement per acquire and per release (a PL/pgSQL function: fencing counter, line, lock delay).',
  contenders: [spec('pg-update'), spec('baton')],
  baseline: 'pg-update',
  subject: 'baton',
  flows: 1,
  runs: [5, 2],
  durationMs: [1000, 300],
  warmupMs: [300, 100],
  minRatio: 0.5,
  store: 'postgres',
})

export const pgHandoff = sqlHandoff({
  id: 'pg-handoff',
  figure: 'P2',
  store: 'PostgreSQL',
  url: (ctx) => ctx.postgresUrl(),
  how: 'A release hands the name over in its own transaction and NOTIFYs the next holder\'s client.',
})

const WAITERS = [16, 256] as const
/** "Independent of the number of waiters": statements per hand-over at 256 waiters within this factor of 16. */
const TARGET_FLATNESS = 1.25

interface StatementsRun {
  stats: HandoffStats
  /** Statements the clients sent (top-level), per hand-over. */
  sent: number
  /** Every statement the database ran, those inside baton's functions included, per hand-over. */
  run: number
  stuckFlows: number
  errors: Record<string, number>
}

/** Σ calls of pg_stat_statements, top-level and all, leaving out the statements reading it. */
const STATEMENT_COUNTS = `
  SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0)::float8 AS sent, coalesce(sum(calls), 0)::float8 AS run
    FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'`

export const pgStatements: Scenario = {
  id: 'pg-statements',
  title: 'P3. Database statements per hand-over, 16 and 256 waiters on one key (PostgreSQL)',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(3, 1)
    const windowMs = ctx.pick(1000, 500)
    const warmupMs = ctx.pick(400, 200)
    const url = await ctx.postgresUrl()
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    const counts = async () => ({ at: wallNow(), ...(await admin.query<{ sent: number; run: number }>(STATEMENT_COUNTS)).rows[0]! })
    const entrants = await openEntrants([spec('baton')], url)
    let results: Map<string, Outcome<StatementsRun>[]>
    try {
      const baton = ready(entrants)[0]
      if (!baton) throw new Error(`baton could not connect: ${entrants[0]?.setupError}`)
      const items = WAITERS.map((waiters) => ({ id: `baton@${waiters}`, waiters }))
      results = await alternate(runs, items, async (item, run) => {
        const flowIds = Array.from({ length: item.waiters + 1 }, (_, i) => i)
        const startAt = wallNow()
        const flows = contendedFlows(baton.contender, {
          key: `bench/${runTag}/pg-statements/${item.waiters}/${run}`,
          flowIds, startAt, stopAt: startAt + warmupMs + item.waiters * 4 + windowMs + 100, holdMs: HOLD_MS, drainMs: DRAIN_MS,
        })
        // The line forms one commit after another: give 256 waiters time to join it.
        await sleep(warmupMs + item.waiters * 4)
        const a = await counts()
        await sleep(a.at + windowMs - wallNow())
        const b = await counts()
        const result = await flows
        const stats = analyzeGrants(result.grants, flowIds, a.at, b.at)
        if (stats.handoffs === 0) throw new Error(noHandoffReason(windowMs, stats.grants, result))
        return {
          stats,
          sent: (b.sent - a.sent) / stats.handoffs,
          run: (b.run - a.run) / stats.handoffs,
          stuckFlows: result.stuckFlows,
          errors: result.errors,
        }
      }, { timeoutMs: warmupMs + windowMs + DRAIN_MS + 30_000, log: ctx.log })
    } finally {
      await closeEntrants(entrants)
      await admin.end().catch(() => {})
    }

    const get = (w: number) => results.get(`baton@${w}`) ?? []
    const sent = WAITERS.map((w) => medianOf(get(w), (r) => r.sent))
    const ran = WAITERS.map((w) => medianOf(get(w), (r) => r.run))
    const flat = (pair: number[]) => pair[1]! / pair[0]!
    const flatMet = (pair: number[]) => (Number.isFinite(flat(pair)) ? flat(pair) <= TARGET_FLATNESS && flat(pair) >= 1 / TARGET_FLATNESS : undefined)
    const rows = WAITERS.map((w) => {
      const outcomes = get(w)
      const note = failureNote(outcomes)
      if (note.startsWith('failed')) return [String(w), note]
      const ok = oks(outcomes)
      const stuck = ok.reduce((n, r) => n + r.stuckFlows, 0)
      const errors = Object.keys(Object.assign({}, ...ok.map((r) => r.errors)))
      return [
        String(w),
        fmtRate(medianOf(outcomes, (r) => r.stats.handoffsPerSec)),
        fmtMs(medianOf(outcomes, (r) => r.stats.releaseToNextP50)),
        fmtNum(medianOf(outcomes, (r) => r.sent), 2),
        fmtNum(medianOf(outcomes, (r) => r.run), 1),
        [note, stuck > 0 ? `⚠ ${stuck} flows stuck` : '', errors.length ? `errors: ${errors.join('; ')}` : ''].filter(Boolean).join('; '),
      ]
    })
    const summary: SummaryRow[] = [
      {
        figure: `P3. statements sent per hand-over, ${WAITERS[0]} → ${WAITERS[1]} waiters (PostgreSQL)`,
        baton: `${fmtNum(sent[0]!, 2)} → ${fmtNum(sent[1]!, 2)}`,
        other: '', ratio: fmtRatio(flat(sent)), target: `≈ 1× (±${Math.round((TARGET_FLATNESS - 1) * 100)}%)`, met: flatMet(sent),
      },
      {
        figure: `P3. statements run (incl. inside functions) per hand-over, ${WAITERS[0]} → ${WAITERS[1]} waiters (PostgreSQL)`,
        baton: `${fmtNum(ran[0]!, 1)} → ${fmtNum(ran[1]!, 1)}`,
        other: '', ratio: fmtRatio(flat(ran)), target: `≈ 1× (±${Math.round((TARGET_FLATNESS - 1) * 100)}%)`, met: flatMet(ran),
      },
    ]
    const markdown = [
      `## ${this.title}`,
      '',
      'One process, one client: N waiter flows plus the holder cycle acquire → hold 1 ms → release → re-acquire on ONE key. '
      + 'Counted with pg_stat_statements (track = all) over the window, per hand-over: statements sent = top-level calls (round trips); '
      + 'statements run = every call, the statements inside baton\'s PL/pgSQL functions included; the counting queries are left out. '
      + `${runs} runs × ${windowMs} ms per size, order rotated; medians.`,
      '',
      table(['waiters', 'hand-overs/s', 'release→next p50', 'statements sent / hand-over', 'statements run / hand-over', 'notes'], rows),
    ].join('\n')
    return { markdown, summary }
  },
}
