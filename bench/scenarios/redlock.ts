/**
 * 11. Redlock over independent Redis masters (its own 3 and 5 redis-servers):
 * uncontended acquire+release against baton on one of those nodes
 * (redis://) and the Redlock peers on all of them, then 16 flows in 2
 * processes on one name over 5 nodes (hand-overs/s, release → next holder,
 * client commands per hand-over), and the Redis-side calls per hand-over,
 * summed over the 5 nodes, with 16 and with 256 waiting flows.
 */
import type { Redis } from 'ioredis'
import { startRedlock, type RedlockSetup } from '../../test/harness/redlock.js'
import { analyzeGrants, sequentialPairs } from '../flows.js'
import { spec, specId, specLabel, type Contender, type ContenderSpec } from '../peers/index.js'
import { closeNodes, openNodes } from '../peers/redis-client.js'
import { commandSnapshot, diffSnapshots } from '../redis-info.js'
import { fmtMs, fmtNum, fmtRate, fmtRatio, median, reasonOf, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, wallNow, withTimeout, type Outcome } from '../util.js'
import { closeEntrants, keyPart, medianOf, openEntrants, ready } from './common.js'
import { forkedFlows } from './forked.js'

const LATENCY_TARGET = 1.5
const PAIRS_TARGET = 1.1
const HANDOFF_TARGET = 1.5
const P50_TARGET_MS = 1
const COMMANDS_PER_NODE_TARGET = 4

interface Pairs {
  rate: number
  p50: number
  p99: number
}

interface Entry {
  readonly id: string
  readonly label: string
  readonly contender: Contender
}

export const redlockScenario: Scenario = {
  id: 'redlock',
  title: '11. Redlock over 3 and 5 independent Redis masters',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const sections: string[] = [`## ${this.title}`]
    const summary: SummaryRow[] = []
    for (const nodes of [3, 5]) {
      const setup = await startRedlock(nodes)
      try {
        const part = await uncontended(ctx, setup, nodes)
        sections.push(part.markdown)
        summary.push(...part.summary)
        if (nodes === 5) {
          const contended = await handoffs(ctx, setup)
          sections.push(contended.markdown)
          summary.push(...contended.summary)
        }
      } finally {
        await setup.stop()
      }
    }
    return { markdown: sections.join('\n\n'), summary }
  },
}

async function uncontended(ctx: BenchContext, setup: RedlockSetup, nodes: number): Promise<ScenarioResult> {
  const runs = ctx.pick(5, 2)
  const durationMs = ctx.pick(800, 250)
  const single = await openEntrants([spec('baton')], setup.nodes[0]!.url)
  const multi = await openEntrants([spec('baton'), spec('redlock'), spec('sesame-redlock'), spec('redis-semaphore-redlock')], setup.url)
  const entries: Entry[] = [
    ...ready(single).map((e) => ({ id: 'single', label: 'baton, redis:// (one of the nodes)', contender: e.contender })),
    ...ready(multi).map((e) => ({
      id: e.spec.peer === 'baton' ? 'baton-redlock' : e.id,
      label: e.spec.peer === 'baton' ? `baton, redlock:// (${nodes} nodes)` : `${e.label}, ${nodes} nodes`,
      contender: e.contender,
    })),
  ]
  const measure = async (e: Entry): Promise<Pairs> => {
    const r = await sequentialPairs(e.contender, `bench/${runTag}/redlock${nodes}/${keyPart(e.id)}`, durationMs)
    return { rate: (r.pairs / r.elapsedMs) * 1000, p50: r.latencies!.percentile(50), p99: r.latencies!.percentile(99) }
  }
  let results: Map<string, Outcome<Pairs>[]>
  try {
    for (const e of entries) await withTimeout(measure(e), durationMs + 10_000, 'warm-up').catch(() => {})
    results = await alternate(runs, entries, measure, { timeoutMs: durationMs + 10_000, log: ctx.log })
  } finally {
    await closeEntrants([...single, ...multi])
  }
  const subject = results.get('baton-redlock')
  const base = results.get('single')
  const paired = (other: Outcome<Pairs>[] | undefined, field: (p: Pairs) => number): number => {
    const ratios = (subject ?? []).flatMap((o, i) => {
      const b = other?.[i]
      return o.ok && b?.ok ? [field(o.value) / field(b.value)] : []
    })
    return median(ratios)
  }
  const p50Ratio = paired(base, (p) => p.p50)
  const p99Ratio = paired(base, (p) => p.p99)
  const peers = entries.filter((e) => e.id !== 'single' && e.id !== 'baton-redlock')
  const vsPeer = new Map(peers.map((p) => [p.id, paired(results.get(p.id), (x) => x.rate)]))
  const best = peers
    .map((p) => ({ p, rate: medianOf(results.get(p.id), (x) => x.rate) }))
    .filter((x) => Number.isFinite(x.rate))
    .sort((a, b) => b.rate - a.rate)[0]
  const vsBest = best ? vsPeer.get(best.p.id)! : NaN
  const rows = entries.map((e) => {
    const outcomes = results.get(e.id)
    const note = failureNote(outcomes)
    if (note.startsWith('failed')) return [e.label, note, '', '', '']
    return [
      e.label,
      fmtRate(medianOf(outcomes, (p) => p.rate)),
      fmtMs(medianOf(outcomes, (p) => p.p50)),
      fmtMs(medianOf(outcomes, (p) => p.p99)),
      e.id === 'baton-redlock' || e.id === 'single' ? '' : fmtRatio(vsPeer.get(e.id)!),
    ]
  })
  const markdown = `### Uncontended acquire+release, one flow, ${nodes} nodes\n\n` +
    table(['contender', 'pairs/s', 'p50 pair', 'p99 pair', 'baton redlock ÷ this (pairs/s)'], rows) +
    `\n\nbaton redlock:// ÷ baton redis:// latency: p50 ${fmtRatio(p50Ratio)}, p99 ${fmtRatio(p99Ratio)} (target ≤ ${LATENCY_TARGET}×). ` +
    'The peers do not check the remaining validity; baton does, and draws a fencing token on every node.'
  const subjectRate = fmtRate(medianOf(subject, (p) => p.rate))
  return {
    markdown,
    summary: [
      {
        figure: `11. redlock ${nodes} nodes: uncontended latency p50 / p99 vs one node`,
        baton: `${fmtMs(medianOf(subject, (p) => p.p50))} / ${fmtMs(medianOf(subject, (p) => p.p99))}`,
        other: `baton redis://: ${fmtMs(medianOf(base, (p) => p.p50))} / ${fmtMs(medianOf(base, (p) => p.p99))}`,
        ratio: `${fmtRatio(p50Ratio)} / ${fmtRatio(p99Ratio)}`,
        target: `≤ ${LATENCY_TARGET}×`,
        met: Number.isFinite(p50Ratio) ? p50Ratio <= LATENCY_TARGET && p99Ratio <= LATENCY_TARGET : undefined,
      },
      {
        figure: `11. redlock ${nodes} nodes: uncontended pairs/s vs the best peer`,
        baton: subjectRate,
        other: best ? `${best.p.label}: ${fmtRate(best.rate)}` : 'no peer ran',
        ratio: fmtRatio(vsBest),
        target: `≥ ${PAIRS_TARGET}×`,
        met: Number.isFinite(vsBest) ? vsBest >= PAIRS_TARGET : undefined,
      },
    ],
  }
}

interface HandoffRun {
  handoffsPerSec: number
  p50: number
  commandsPerHandoff: number
  redisCallsPerHandoff: number
}

async function handoffs(ctx: BenchContext, setup: RedlockSetup): Promise<ScenarioResult> {
  const runs = ctx.pick(3, 1)
  const windowMs = ctx.pick(2000, 1000)
  const warmupMs = ctx.pick(300, 200)
  const nodes = setup.nodes.length
  const admins: Redis[] = await openNodes(setup.url)
  const specs: ContenderSpec[] = [spec('baton'), spec('redlock', 'fast'), spec('sesame-redlock', 'fast'), spec('redis-semaphore-redlock', 'fast')]
  const entries = specs.map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
  const snapshot = () => Promise.all(admins.map((a) => commandSnapshot(a)))
  const run = async (flows: number, s: ContenderSpec, key: string): Promise<HandoffRun> => {
    const forked = forkedFlows({ ...ctx, redisUrl: setup.url }, {
      processes: 2, flows, holdMs: 1, drainMs: 8000, warmupMs, windowMs, countCommands: true,
    })
    try {
      const r = await forked.run(s, key, async (from, to) => {
        await waitUntil(from)
        const before = await snapshot()
        await waitUntil(to)
        const after = await snapshot()
        return after.reduce((n, snap, i) => n + diffSnapshots(before[i]!, snap).calls, 0)
      })
      const stats = analyzeGrants(r.grants, forked.flowIds, r.from, r.to)
      if (stats.handoffs === 0) throw new Error(`no hand-over in ${windowMs} ms`)
      return {
        handoffsPerSec: stats.handoffsPerSec,
        p50: stats.releaseToNextP50,
        commandsPerHandoff: r.commandsPerGrant,
        redisCallsPerHandoff: r.during / stats.handoffs,
      }
    } finally {
      await forked.close()
    }
  }
  let results: Map<string, Outcome<HandoffRun>[]>
  let herd: Outcome<HandoffRun>[] = []
  try {
    results = await alternate(runs, entries, (e, i) => run(16, e.spec, `bench/${runTag}/redlock-handoff/${keyPart(e.id)}/${i}`), {
      timeoutMs: windowMs + warmupMs + 40_000, log: ctx.log,
    })
    for (let i = 0; i < runs; i++) {
      herd.push(await run(256, spec('baton'), `bench/${runTag}/redlock-herd/${i}`).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, reason: reasonOf(error) }),
      ))
    }
  } finally {
    await closeNodes(admins)
  }
  const baton = entries[0]!
  const batonRuns = results.get(baton.id)
  const peers = entries.slice(1)
  const best = peers
    .map((p) => ({ p, rate: medianOf(results.get(p.id), (r) => r.handoffsPerSec) }))
    .filter((x) => Number.isFinite(x.rate))
    .sort((a, b) => b.rate - a.rate)[0]
  const batonRate = medianOf(batonRuns, (r) => r.handoffsPerSec)
  const ratio = best ? batonRate / best.rate : NaN
  const p50 = medianOf(batonRuns, (r) => r.p50)
  const commands = medianOf(batonRuns, (r) => r.commandsPerHandoff)
  const calls16 = medianOf(batonRuns, (r) => r.redisCallsPerHandoff)
  const calls256 = medianOf(herd, (r) => r.redisCallsPerHandoff)
  const rows = entries.map((e) => {
    const outcomes = results.get(e.id)
    const note = failureNote(outcomes)
    if (note.startsWith('failed')) return [e.label, note, '', '', '']
    return [
      e.label,
      fmtRate(medianOf(outcomes, (r) => r.handoffsPerSec)),
      fmtMs(medianOf(outcomes, (r) => r.p50)),
      fmtNum(medianOf(outcomes, (r) => r.commandsPerHandoff), 1),
      fmtNum(medianOf(outcomes, (r) => r.redisCallsPerHandoff), 1),
    ]
  })
  rows.push(['baton, 256 flows', fmtRate(medianOf(herd, (r) => r.handoffsPerSec)), fmtMs(medianOf(herd, (r) => r.p50)),
    fmtNum(medianOf(herd, (r) => r.commandsPerHandoff), 1), fmtNum(calls256, 1)])
  const markdown = `### Hand-over: 16 flows in 2 processes on one name, ${nodes} nodes\n\n` +
    table(['contender', 'hand-overs/s', 'release → next p50', 'client commands / hand-over (Σ nodes)', 'Redis-side calls / hand-over (Σ nodes)'], rows) +
    `\n\nPeers at their most aggressive setting (retry every 1 ms). ${oks(herd).length ? '' : 'The 256-flow run failed.'}`
  return {
    markdown,
    summary: [
      {
        figure: `11. redlock ${nodes} nodes: hand-overs/s, 16 flows / 2 processes`,
        baton: fmtRate(batonRate),
        other: best ? `${best.p.label}: ${fmtRate(best.rate)}` : 'no peer ran',
        ratio: fmtRatio(ratio),
        target: `≥ ${HANDOFF_TARGET}× best peer`,
        met: Number.isFinite(ratio) ? ratio >= HANDOFF_TARGET : undefined,
      },
      {
        figure: `11. redlock ${nodes} nodes: release → next holder p50`,
        baton: fmtMs(p50), other: '', ratio: '', target: `≤ ${P50_TARGET_MS} ms`,
        met: Number.isFinite(p50) ? p50 <= P50_TARGET_MS : undefined,
      },
      {
        figure: `11. redlock ${nodes} nodes: client commands per hand-over (Σ nodes)`,
        baton: fmtNum(commands, 1), other: '', ratio: '', target: `≤ ${COMMANDS_PER_NODE_TARGET * nodes}`,
        met: Number.isFinite(commands) ? commands <= COMMANDS_PER_NODE_TARGET * nodes : undefined,
      },
      {
        figure: `11. redlock ${nodes} nodes: Redis-side calls per hand-over, 16 vs 256 flows`,
        baton: `${fmtNum(calls16, 1)} → ${fmtNum(calls256, 1)}`, other: '', ratio: fmtRatio(calls256 / calls16), target: '≈ 1× (±25%)',
        met: Number.isFinite(calls256 / calls16) ? Math.abs(calls256 / calls16 - 1) <= 0.25 : undefined,
      },
    ],
  }
}

async function waitUntil(wallMs: number): Promise<void> {
  const left = wallMs - wallNow()
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left))
}
