/**
 * 4. Store commands per hand-over with 16 and 256 waiters on one key, in one
 * process: flows of one client cycle acquire → hold 1 ms → release (the same
 * shape for other contenders: commandsScenario(), e.g. figure 8). Counted
 * from INFO: total_commands_processed (what clients sent) and the sum of
 * commandstats calls (also the calls scripts make inside Redis).
 */
import { analyzeGrants, contendedFlows, type HandoffStats } from '../flows.js'
import { spec, type ContenderSpec, type PeerId } from '../peers/index.js'
import { closeRedis, openRedis } from '../peers/redis-client.js'
import { commandSnapshot, countSentCommands, diffSnapshots } from '../redis-info.js'
import { fmtMet, fmtNum, fmtRate, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, sleep, wallNow, type Outcome } from '../util.js'
import { closeEntrants, keyPart, medianOf, openEntrants, ready, type Entrant } from './common.js'
import { noHandoffReason } from './forked.js'

const WAITERS = [16, 256] as const
const HOLD_MS = 1
const DRAIN_MS = 10_000
const TARGET_CLIENT_COMMANDS = 4
/** "About equal": Redis-side calls per hand-over at 256 waiters within this factor of 16 waiters. */
const TARGET_FLATNESS = 1.25

interface Item {
  readonly id: string
  readonly entrant: Entrant
  readonly waiters: number
}

interface RunResult {
  stats: HandoffStats
  clientCommands: number
  totalProcessed: number
  redisCalls: number
  perCommand: Map<string, number>
  stuckFlows: number
  errors: Record<string, number>
}

export interface CommandsScenarioOptions {
  id: string
  /** Figure number in the summary, e.g. "4". */
  figure: string
  title: string
  /** What the figure's summary rows call the subject's lock, e.g. "fair mutex" (or nothing). */
  subjectName?: string
  /** The contender under test and the ones it is compared with. */
  subject: PeerId
  contenders: ContenderSpec[]
  /** What the contenders are (after the common description). */
  notes: string
  runs: [full: number, quick: number]
  windowMs: [full: number, quick: number]
  warmupMs: [full: number, quick: number]
}

export const commands = commandsScenario({
  id: 'commands',
  figure: '4',
  title: '4. Commands per hand-over, 16 and 256 waiters on one key (Redis)',
  subject: 'baton',
  contenders: [spec('baton'), spec('redlock', 'fast'), spec('sesame-redlock', 'fast'), spec('redis-semaphore', 'fast')],
  notes: 'Peers retry every 1 ms.',
  runs: [3, 1],
  windowMs: [800, 400],
  warmupMs: [300, 150],
})

/**
 * Store commands per hand-over with 16 and 256 waiters on one key, in one
 * process, for `o.contenders`; the subject's targets: ≤ 4 client commands,
 * Redis-side calls about the same at both sizes.
 */
export function commandsScenario(o: CommandsScenarioOptions): Scenario {
  return {
    id: o.id,
    title: o.title,
    async run(ctx: BenchContext): Promise<ScenarioResult> {
      const runs = ctx.pick(...o.runs)
      const windowMs = ctx.pick(...o.windowMs)
      const warmupMs = ctx.pick(...o.warmupMs)
      countSentCommands()
      const admin = await openRedis(ctx.redisUrl)
      const entrants = await openEntrants(o.contenders, ctx.redisUrl)
      let results: Map<string, Outcome<RunResult>[]>
      try {
        // What our own two INFO calls add, measured on an idle server.
        const overheads: { total: number; calls: number }[] = []
        for (let i = 0; i < 3; i++) overheads.push(diffSnapshots(await commandSnapshot(admin), await commandSnapshot(admin)))
        const overhead = { total: median(overheads.map((x) => x.total)), calls: median(overheads.map((x) => x.calls)) }

        const items: Item[] = ready(entrants).flatMap((entrant) =>
          WAITERS.map((waiters) => ({ id: `${entrant.id}@${waiters}`, entrant, waiters })))
        const measure = async (item: Item, run: number): Promise<RunResult> => {
          // N waiters plus the flow holding: N + 1 flows.
          const flowIds = Array.from({ length: item.waiters + 1 }, (_, i) => i)
          const key = `bench/${runTag}/${o.id}/${keyPart(item.entrant.id)}/${item.waiters}/${run}`
          const startAt = wallNow()
          const flows = contendedFlows(item.entrant.contender!, {
            key, flowIds, startAt, stopAt: startAt + warmupMs + windowMs + 100, holdMs: HOLD_MS, drainMs: DRAIN_MS,
          })
          await sleep(warmupMs)
          const a = await commandSnapshot(admin)
          await sleep(a.at + windowMs - wallNow())
          const b = await commandSnapshot(admin)
          const result = await flows
          const stats = analyzeGrants(result.grants, flowIds, a.at, b.at)
          if (stats.handoffs === 0) throw new Error(noHandoffReason(windowMs, stats.grants, result))
          const d = diffSnapshots(a, b)
          const perCommand = new Map([...d.perCommand].map(([name, n]) => [name, n / stats.handoffs]))
          return {
            stats,
            clientCommands: d.sent / stats.handoffs,
            totalProcessed: (d.total - overhead.total) / stats.handoffs,
            redisCalls: (d.calls - overhead.calls) / stats.handoffs,
            perCommand,
            stuckFlows: result.stuckFlows,
            errors: result.errors,
          }
        }
        results = await alternate(runs, items, measure, { timeoutMs: warmupMs + windowMs + DRAIN_MS + 30_000, log: ctx.log })
        for (const e of entrants) {
          if (e.setupError) for (const w of WAITERS) results.set(`${e.id}@${w}`, [{ ok: false, reason: e.setupError }])
        }
      } finally {
        await closeEntrants(entrants)
        await closeRedis(admin)
      }
      return report(o, entrants, results, runs, windowMs)
    },
  }
}

function report(o: CommandsScenarioOptions, entrants: Entrant[], results: Map<string, Outcome<RunResult>[]>, runs: number, windowMs: number): ScenarioResult {
  const baton = entrants.find((e) => e.spec.peer === o.subject)!
  const peers = entrants.filter((e) => e !== baton)
  const get = (e: Entrant, w: number): Outcome<RunResult>[] => results.get(`${e.id}@${w}`) ?? []
  const clientOf = (r: RunResult): number => r.clientCommands
  const callsOf = (r: RunResult): number => r.redisCalls
  const batonCalls = WAITERS.map((w) => medianOf(get(baton, w), callsOf))
  const flatness = batonCalls[1]! / batonCalls[0]!
  const flatMet = Number.isFinite(flatness) ? flatness <= TARGET_FLATNESS && flatness >= 1 / TARGET_FLATNESS : undefined

  const headers = [
    'contender', 'waiters', 'hand-overs/s', 'client cmds / hand-over', 'Δ total_commands_processed / hand-over',
    'Redis-side calls / hand-over', 'target', 'met?', 'notes',
  ]
  const rows: string[][] = []
  for (const e of entrants) {
    for (const w of WAITERS) {
      const outcomes = get(e, w)
      const note = failureNote(outcomes)
      if (note.startsWith('failed')) {
        rows.push([e.label, String(w), note])
        continue
      }
      const ok = oks(outcomes)
      const client = medianOf(outcomes, clientOf)
      const isBaton = e === baton
      const stuck = ok.reduce((n, r) => n + r.stuckFlows, 0)
      const errors = Object.keys(Object.assign({}, ...ok.map((r) => r.errors)))
      rows.push([
        e.label,
        String(w),
        fmtRate(medianOf(outcomes, (r) => r.stats.handoffsPerSec)),
        fmtNum(client, 2),
        fmtNum(medianOf(outcomes, (r) => r.totalProcessed), 1),
        fmtNum(medianOf(outcomes, callsOf), 1),
        isBaton ? `≤ ${TARGET_CLIENT_COMMANDS} client cmds${w === WAITERS[1] ? `; calls ≈ ${WAITERS[0]} waiters (±${Math.round((TARGET_FLATNESS - 1) * 100)}%)` : ''}` : '',
        isBaton ? fmtMet(Number.isFinite(client) ? client <= TARGET_CLIENT_COMMANDS && (w === WAITERS[0] || flatMet !== false) : undefined) : '',
        [
          note,
          isBaton ? `calls: ${topCommands(ok)}` : '',
          stuck > 0 ? `⚠ ${stuck} flows still waiting ${DRAIN_MS / 1000} s after the window` : '',
          errors.length ? `errors: ${errors.join('; ')}` : '',
        ].filter(Boolean).join('; '),
      ])
    }
  }

  const figure = `${o.figure}.${o.subjectName ? ` ${o.subjectName}` : ''}`
  const summary: SummaryRow[] = WAITERS.map((w) => {
    const batonClient = medianOf(get(baton, w), clientOf)
    const best = [...peers].map((p) => ({ p, v: medianOf(get(p, w), clientOf) })).filter((x) => Number.isFinite(x.v)).sort((a, b) => a.v - b.v)[0]
    return {
      figure: `${figure} client commands per hand-over, ${w} waiters`,
      baton: fmtNum(batonClient, 2),
      other: !best ? 'no peer finished' : peers.length === 1 ? `${best.p.label}: ${fmtNum(best.v, 2)}` : `fewest of peers (${best.p.label}): ${fmtNum(best.v, 1)}`,
      ratio: best ? fmtRatio(batonClient / best.v) : '—',
      target: `≤ ${TARGET_CLIENT_COMMANDS}`,
      met: Number.isFinite(batonClient) ? batonClient <= TARGET_CLIENT_COMMANDS : undefined,
    }
  })
  summary.push({
    figure: `${figure} Redis-side calls per hand-over, ${WAITERS[1]} vs ${WAITERS[0]} waiters`,
    baton: `${fmtNum(batonCalls[0]!, 1)} → ${fmtNum(batonCalls[1]!, 1)}`,
    other: peers.map((p) => `${peers.length === 1 ? p.label : p.spec.peer}: ${fmtNum(medianOf(get(p, WAITERS[0]), callsOf), 0)} → ${fmtNum(medianOf(get(p, WAITERS[1]), callsOf), 0)}`).join(', '),
    ratio: fmtRatio(flatness),
    target: `≈ 1× (±${Math.round((TARGET_FLATNESS - 1) * 100)}%)`,
    met: flatMet,
  })
  const markdown = [
    `## ${o.title}`,
    '',
    'One process, one client per contender: N waiter flows plus the holder (N + 1 flows) cycle acquire (wait up to 30 s) → hold 1 ms → release → re-acquire, so N flows wait at any time. '
    + 'Per hand-over (grant to another flow than the previous holder) over the window: '
    + 'client cmds = commands the clients sent, counted at ioredis\' sendCommand in this process; '
    + 'Redis-side calls = Δ Σ calls over INFO commandstats (includes calls made inside scripts, PUBLISH included), our INFO calls excluded. '
    + 'Δ total_commands_processed is shown for reference only: on Redis 7 it counts the calls scripts make as well, so it is not a count of client commands. '
    + `${o.notes} `
    + `${runs} runs × ${windowMs} ms per contender and size, order rotated; medians.`,
    '',
    table(headers, rows),
  ].join('\n')
  return { markdown, summary }
}

/** baton's Redis-side calls per hand-over by command, e.g. "evalsha 2.0, zrange 3.1, …" (last run). */
function topCommands(ok: RunResult[]): string {
  const last = ok[ok.length - 1]
  if (!last) return ''
  return [...last.perCommand].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ')
}
