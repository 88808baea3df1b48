/**
 * 10. Semaphore with 8 permits: 32 flows in 2 OS processes on ONE semaphore,
 * each acquiring a permit, holding 1 ms, releasing and re-acquiring at once.
 * baton's semaphore against redis-semaphore's Semaphore at its most
 * aggressive retry (1 ms) and at its defaults, in the same runs. Client
 * commands are counted at ioredis' sendCommand inside each worker.
 */
import { analyzePermits, type PermitStats } from '../flows.js'
import { spec, specId, specLabel, type ContenderSpec } from '../peers/index.js'
import { closeRedis, openRedis } from '../peers/redis-client.js'
import { commandSnapshot, diffSnapshots, type CommandSnapshot } from '../redis-info.js'
import { fmtMet, fmtMs, fmtNum, fmtRate, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, pairedRatios, runTag, sleep, wallNow, type Outcome } from '../util.js'
import { keyPart, medianOf } from './common.js'
import { forkedFlows, mergeCounts } from './forked.js'

const PERMITS = 8
const FLOWS = 32
const PROCESSES = 2
const HOLD_MS = 1
const DRAIN_MS = 8000

const TARGET_RATIO = 1.5
const TARGET_CLIENT_COMMANDS = 4

interface Entry {
  readonly id: string
  readonly label: string
  readonly spec: ContenderSpec
}

interface RunResult {
  stats: PermitStats
  /** Client commands per grant (workers' ioredis sendCommand). */
  clientCommands: number
  /** Δ Σ commandstats calls per grant (includes the calls scripts make). */
  redisCalls: number
  errors: Record<string, number>
  counters: Record<string, number>
  stuckFlows: number
}

export const semaphore: Scenario = {
  id: 'semaphore',
  title: `10. Semaphore, ${PERMITS} permits: ${FLOWS} flows in ${PROCESSES} processes on one name (Redis)`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 1)
    const windowMs = ctx.pick(1500, 1000)
    const warmupMs = ctx.pick(300, 200)
    const permits = { permits: PERMITS }
    const specs = [spec('baton-semaphore', 'default', permits), spec('redis-semaphore-sem', 'fast', permits), spec('redis-semaphore-sem', 'default', permits)]
    const entries: Entry[] = specs.map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
    const forked = forkedFlows(ctx, { processes: PROCESSES, flows: FLOWS, holdMs: HOLD_MS, drainMs: DRAIN_MS, warmupMs, windowMs, countCommands: true })
    const admin = await openRedis(ctx.redisUrl)
    // INFO at both ends of the window, from this process.
    const snapshots = async (from: number, to: number): Promise<[CommandSnapshot, CommandSnapshot]> => {
      await sleep(from - wallNow())
      const a = await commandSnapshot(admin)
      await sleep(to - wallNow())
      return [a, await commandSnapshot(admin)]
    }

    const measure = async (entry: Entry, run: number): Promise<RunResult> => {
      const key = `bench/${runTag}/semaphore/${keyPart(entry.id)}/${run}`
      const r = await forked.run(entry.spec, key, snapshots)
      const stats = analyzePermits(r.grants, forked.flowIds, r.from, r.to, PERMITS)
      if (stats.grants === 0) {
        const why = Object.keys(r.errors)[0]
        throw new Error(`no grant in ${windowMs} ms${r.stuckFlows ? ` (${r.stuckFlows} flows stuck in acquire/release)` : ''}${why ? `; ${why}` : ''}`)
      }
      const [a, b] = r.during
      const between = analyzePermits(r.grants, forked.flowIds, a.at, b.at, PERMITS).grants
      return {
        stats,
        clientCommands: r.commandsPerGrant,
        redisCalls: between > 0 ? diffSnapshots(a, b).calls / between : NaN,
        errors: r.errors,
        counters: r.counters,
        stuckFlows: r.stuckFlows,
      }
    }

    let results: Map<string, Outcome<RunResult>[]>
    try {
      results = await alternate(runs, entries, measure, { timeoutMs: windowMs + warmupMs + DRAIN_MS + 30_000, log: ctx.log })
    } finally {
      await forked.close()
      await closeRedis(admin)
    }
    return report(entries, results, runs, windowMs)
  },
}

function report(entries: Entry[], results: Map<string, Outcome<RunResult>[]>, runs: number, windowMs: number): ScenarioResult {
  const [baton, fast, defaults] = entries as [Entry, Entry, Entry]
  const batonRuns = results.get(baton.id)!
  const rate = (r: RunResult): number => r.stats.grantsPerSec
  const client = (r: RunResult): number => r.clientCommands
  const ratio = median(pairedRatios(batonRuns, results.get(fast.id), rate))
  const batonClient = medianOf(batonRuns, client)
  const met = {
    ratio: Number.isFinite(ratio) ? ratio >= TARGET_RATIO : undefined,
    client: Number.isFinite(batonClient) ? batonClient <= TARGET_CLIENT_COMMANDS : undefined,
  }
  const allMet = met.ratio === undefined || met.client === undefined ? undefined : met.ratio && met.client

  const headers = [
    'contender', 'grants/s', 'wait p50', 'wait p99', 'Jain', 'min grants/flow (worst run)', 'most holders at once',
    'client cmds / grant', 'Redis-side calls / grant', 'baton ÷ this', 'target', 'met?', 'notes',
  ]
  const rows = entries.map((e) => {
    const outcomes = results.get(e.id)!
    const note = failureNote(outcomes)
    if (note.startsWith('failed')) return [e.label, note]
    const ok = oks(outcomes)
    const isBaton = e === baton
    const errors = mergeCounts(ok.map((r) => r.errors))
    const counters = mergeCounts(ok.map((r) => r.counters))
    const overCapacity = ok.reduce((n, r) => n + r.stats.overCapacity, 0)
    const stuck = ok.reduce((n, r) => n + r.stuckFlows, 0)
    const uncounted = ok.filter((r) => !Number.isFinite(r.clientCommands)).length
    return [
      e.label,
      fmtRate(medianOf(outcomes, rate)),
      fmtMs(medianOf(outcomes, (r) => r.stats.waitP50)),
      fmtMs(medianOf(outcomes, (r) => r.stats.waitP99)),
      fmtNum(medianOf(outcomes, (r) => r.stats.jain), 3),
      String(Math.min(...ok.map((r) => r.stats.minGrants))),
      String(Math.max(...ok.map((r) => r.stats.maxHolders))),
      fmtNum(medianOf(outcomes, client), 2),
      fmtNum(medianOf(outcomes, (r) => r.redisCalls), 1),
      isBaton ? '' : fmtRatio(median(pairedRatios(batonRuns, outcomes, rate))),
      isBaton ? `≥ ${TARGET_RATIO}× ${fast.label}; ≤ ${TARGET_CLIENT_COMMANDS} client cmds / grant` : '',
      isBaton ? fmtMet(allMet) : '',
      [
        note,
        ...Object.entries(counters).filter(([, n]) => n > 0).map(([k, n]) => `${k}: ${n}×`),
        ...Object.entries(errors).map(([k, n]) => `${n}× error: ${k}`),
        overCapacity > 0 ? `⚠ ${overCapacity} grants made more than ${PERMITS} holders at once` : '',
        stuck > 0 ? `⚠ ${stuck} flows still waiting ${DRAIN_MS / 1000} s after the window` : '',
        uncounted > 0 ? `⚠ ${uncounted} runs: the sendCommand counter saw no commands` : '',
      ].filter(Boolean).join('; '),
    ]
  })

  const figure = `10. semaphore (${PERMITS} permits)`
  const summary: SummaryRow[] = [
    {
      figure: `${figure} grants/s, ${FLOWS} flows / ${PROCESSES} processes, 1 name`,
      baton: fmtRate(medianOf(batonRuns, rate)),
      other: `${fast.label}: ${fmtRate(medianOf(results.get(fast.id), rate))}; defaults: ${fmtRate(medianOf(results.get(defaults.id), rate))}`,
      ratio: fmtRatio(ratio),
      target: `≥ ${TARGET_RATIO}× retry 1 ms`,
      met: met.ratio,
    },
    {
      figure: `${figure} client commands per grant`,
      baton: fmtNum(batonClient, 2),
      other: `${fast.label}: ${fmtNum(medianOf(results.get(fast.id), client), 1)}; defaults: ${fmtNum(medianOf(results.get(defaults.id), client), 1)}`,
      ratio: fmtRatio(median(pairedRatios(batonRuns, results.get(fast.id), client))),
      target: `≤ ${TARGET_CLIENT_COMMANDS}`,
      met: met.client,
    },
  ]
  const markdown = [
    `## ${semaphore.title}`,
    '',
    `${FLOWS} flows split over ${PROCESSES} forked OS processes (one client per process and contender), all on ONE semaphore of ${PERMITS} permits; `
    + `each flow loops acquire a permit (wait up to 30 s) → hold ${HOLD_MS} ms (setTimeout) → release → re-acquire at once. `
    + `baton: \`baton.semaphore(name, { permits: ${PERMITS}, ttl: '10s' })\`; redis-semaphore: \`new Semaphore(client, name, ${PERMITS}, { acquireTimeout: 30000, lockTimeout: 10000, refreshInterval: 0 })\` per acquisition, `
    + 'with `retryInterval: 1` (its most aggressive) and with its default retry (10 ms). '
    + 'wait: acquire call start → grant. "most holders at once" is over the whole run (grant → release call start; must never exceed the permits). '
    + 'client cmds / grant: commands the workers\' ioredis clients sent during the window (counted at sendCommand in each worker) ÷ grants in it; '
    + 'Redis-side calls / grant: Δ Σ calls over INFO commandstats (includes calls made inside scripts). '
    + `${runs} runs × ${windowMs} ms window per contender, order rotated each run; medians over runs; "baton ÷ this" is the median of per-run ratios.`,
    '',
    table(headers, rows),
  ].join('\n')
  return { markdown, summary }
}
