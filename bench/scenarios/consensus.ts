/**
 * The consensus stores (etcd, ZooKeeper): uncontended pairs and the figure-3
 * hand-over setup (16 flows, 2 processes, one key) for baton against each
 * store's own recipes, plus ZooKeeper requests per hand-over with 16 vs 256
 * waiters (no herd). Each store is started once, on first use, by the test
 * harness (own process, loopback, free ports).
 */
import zookeeper from 'node-zookeeper-client'
import { startEtcd } from '../../test/harness/etcd.js'
import { startZookeeper } from '../../test/harness/zookeeper.js'
import { contendedFlows } from '../flows.js'
import { createContender, spec, specId, specLabel, type ContenderSpec, type PeerId } from '../peers/index.js'
import { fmtMs, fmtNum, fmtRate, fmtRatio, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { failureNote, oks, runTag, wallNow } from '../util.js'
import { medianOf } from './common.js'
import { DRAIN_MS, FLOWS, HANDOFF_HEADERS, handoffCells, handoffNotes, HOLD_MS, measureHandoffs, PROCESSES, type Entry, type HandoffRun } from './handoff.js'
import { pairsScenario } from './pairs.js'

export type Store = 'etcd' | 'zookeeper'

const urls = new Map<Store, Promise<string>>()
/** One server per store for the whole benchmark (stopped by stopAll() at the end). */
export function storeUrl(store: Store): Promise<string> {
  let url = urls.get(store)
  if (!url) {
    url = store === 'etcd' ? startEtcd().then((e) => e.url) : startZookeeper().then((z) => `zk://${z.hosts}`)
    urls.set(store, url)
  }
  return url
}

/** A scenario run against `store` instead of Redis: the context's URL is the store's. */
function on(store: Store, scenario: Scenario): Scenario {
  return {
    id: scenario.id,
    title: scenario.title,
    async run(ctx) {
      return scenario.run({ ...ctx, redisUrl: await storeUrl(store) })
    },
  }
}

const STORE_LABEL: Record<Store, string> = { etcd: 'etcd', zookeeper: 'ZooKeeper' }

export const etcdPairs = on('etcd', pairsScenario({
  id: 'etcd-uncontended',
  figure: 'E1',
  title: 'E1. etcd: uncontended acquire+release, one key, one flow',
  notes: 'One etcd member (loopback). etcd3 Lock: the package\'s own lock (lease grant, put-if-absent, revoke) in a retry loop; '
    + 'v3lock: etcd\'s server-side Lock RPC (what `etcdctl lock` uses) with a lease per concurrent holder, plus Unlock.',
  contenders: [spec('baton'), spec('etcd3-lock', 'fast'), spec('etcd-v3lock')],
  baseline: 'etcd-v3lock',
  subject: 'baton',
  flows: 1,
  runs: [5, 2],
  durationMs: [1000, 300],
  warmupMs: [300, 100],
  minRatio: 0.8,
}))

export const zkPairs = on('zookeeper', pairsScenario({
  id: 'zk-uncontended',
  figure: 'Z1',
  title: 'Z1. ZooKeeper: uncontended acquire+release, one key, one flow',
  notes: 'One ZooKeeper server (loopback). Recipe: the straightforward lock recipe (EPHEMERAL_SEQUENTIAL, lowest holds, watch the predecessor) on the same client library.',
  contenders: [spec('baton'), spec('zk-recipe')],
  baseline: 'zk-recipe',
  subject: 'baton',
  flows: 1,
  runs: [5, 2],
  durationMs: [1000, 300],
  warmupMs: [300, 100],
  minRatio: 1.0,
}))


/** Figure 3's setup on a consensus store: baton against `peers`, targets as ratios against each. */
function consensusHandoff(store: Store, id: string, figure: string, peers: { spec: ContenderSpec; target: number }[]): Scenario {
  const title = `${figure}. ${STORE_LABEL[store]}: hand-over, ${FLOWS} flows in ${PROCESSES} processes on one key`
  return on(store, {
    id,
    title,
    async run(ctx: BenchContext): Promise<ScenarioResult> {
      const runs = ctx.pick(5, 1)
      const windowMs = ctx.pick(2000, 1000)
      const warmupMs = ctx.pick(300, 200)
      const entries: Entry[] = [spec('baton'), ...peers.map((p) => p.spec)].map((s) => ({ id: specId(s), label: specLabel(s), spec: s }))
      const results = await measureHandoffs(ctx, entries, id, { runs, windowMs, warmupMs })
      const baton = entries[0]!
      const rate = (r: HandoffRun): number => r.stats.handoffsPerSec
      const ratioTo = (peer: Entry): number => median(results.get(baton.id)!.flatMap((b, i) => {
        const p = results.get(peer.id)![i]
        return b.ok && p?.ok ? [rate(b.value) / rate(p.value)] : []
      }))
      const rows = entries.map((e, i) => {
        const outcomes = results.get(e.id)!
        const note = failureNote(outcomes)
        if (note.startsWith('failed')) return [e.label, note]
        const target = i === 0 ? undefined : peers[i - 1]!.target
        const ratio = i === 0 ? NaN : ratioTo(e)
        return [
          e.label, ...handoffCells(outcomes),
          i === 0 ? '' : fmtRatio(ratio),
          target === undefined ? '' : `≥ ${target}×`,
          target === undefined || !Number.isFinite(ratio) ? '' : ratio >= target ? 'yes' : 'no',
          [note, ...handoffNotes(oks(outcomes))].filter(Boolean).join('; '),
        ]
      })
      const summary: SummaryRow[] = entries.slice(1).map((e, i) => {
        const ratio = ratioTo(e)
        return {
          figure: `${figure}. ${STORE_LABEL[store]} hand-overs/s vs ${e.label}`,
          baton: fmtRate(medianOf(results.get(baton.id), rate)),
          other: `${e.label}: ${fmtRate(medianOf(results.get(e.id), rate))}`,
          ratio: fmtRatio(ratio),
          target: `≥ ${peers[i]!.target}×`,
          met: Number.isFinite(ratio) ? ratio >= peers[i]!.target : undefined,
        }
      })
      summary.push({
        figure: `${figure}. ${STORE_LABEL[store]} release → next holder, p50`,
        baton: fmtMs(medianOf(results.get(baton.id), (r) => r.stats.releaseToNextP50)),
        other: entries.slice(1).map((e) => `${e.label}: ${fmtMs(medianOf(results.get(e.id), (r) => r.stats.releaseToNextP50))}`).join('; '),
        ratio: '—',
        target: '—',
        met: undefined,
      })
      const markdown = [
        `## ${title}`,
        '',
        `Figure 3's setup (${FLOWS} flows over ${PROCESSES} forked processes, one key, hold ${HOLD_MS} ms, re-acquire at once) on one ${STORE_LABEL[store]} server. `
        + `${runs} runs × ${windowMs} ms per contender, order rotated; medians; "baton ÷ this" is the median of per-run ratios.`,
        '',
        table(['contender', ...HANDOFF_HEADERS, 'baton ÷ this', 'target', 'met?', 'notes'], rows),
      ].join('\n')
      return { markdown, summary }
    },
  })
}

export const etcdHandoff = consensusHandoff('etcd', 'etcd-handoff', 'E2', [
  { spec: spec('etcd3-lock', 'fast'), target: 3 },
  { spec: spec('etcd3-lock', 'default'), target: 3 },
  { spec: spec('etcd-v3lock'), target: 1 },
])

export const zkHandoff = consensusHandoff('zookeeper', 'zk-handoff', 'Z2', [{ spec: spec('zk-recipe'), target: 1 }])

/** Counts requests node-zookeeper-client sends from this process (pings excluded: they are not queued). */
function countZkRequests(): { read(): number; stop(): void } {
  const require = (zookeeper as unknown as { createClient: (...a: unknown[]) => { connectionManager: object } })
  const probe = require.createClient('127.0.0.1:1')
  const proto = Object.getPrototypeOf(probe.connectionManager) as { queue: (...args: unknown[]) => unknown }
  const original = proto.queue
  let n = 0
  proto.queue = function (this: unknown, ...args: unknown[]) {
    n++
    return original.apply(this, args)
  }
  return { read: () => n, stop: () => void (proto.queue = original) }
}

/** Z3: requests per hand-over with 16 and with 256 flows waiting on one key, in this process. */
export const zkHerd: Scenario = on('zookeeper', {
  id: 'zk-herd',
  title: 'Z3. ZooKeeper: requests per hand-over, 16 vs 256 waiters on one key',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const windowMs = ctx.pick(3000, 1000)
    const warmupMs = ctx.pick(1500, 700)
    const sizes = [16, 256]
    const peers: PeerId[] = ['baton', 'zk-recipe']
    const perHandoff = new Map<string, number>()
    for (const peer of peers) {
      for (const flows of sizes) {
        const contender = await createContender(spec(peer), ctx.redisUrl)
        const counter = countZkRequests()
        try {
          const startAt = wallNow() + 50
          // Steady state only: every flow has joined the line before the counting window opens.
          const from = startAt + warmupMs
          const stopAt = from + windowMs
          const key = `bench/${runTag}/zk-herd/${peer}/${flows}`
          const flowIds = Array.from({ length: flows }, (_, i) => i)
          let atFrom = NaN
          let atTo = NaN
          const marks = [
            setTimeout(() => (atFrom = counter.read()), from - wallNow()),
            setTimeout(() => (atTo = counter.read()), stopAt - wallNow()),
          ]
          const r = await contendedFlows(contender, { key, flowIds, startAt, stopAt, holdMs: HOLD_MS, drainMs: DRAIN_MS * 2 })
          marks.forEach(clearTimeout)
          let grants = 0
          for (let i = 0; i < r.grants.length; i += 4) if (r.grants[i + 2]! >= from && r.grants[i + 2]! < stopAt) grants++
          perHandoff.set(`${peer}/${flows}`, (atTo - atFrom) / Math.max(1, grants))
          ctx.log(`  ${peer} ${flows} waiters: ${grants} grants, ${atTo - atFrom} requests in the window, stuck ${r.stuckFlows}`)
        } finally {
          counter.stop()
          await contender.close()
        }
      }
    }
    const rows = peers.map((peer) => [
      specLabel(spec(peer)),
      ...sizes.map((n) => fmtNum(perHandoff.get(`${peer}/${n}`)!, 2)),
      fmtRatio(perHandoff.get(`${peer}/256`)! / perHandoff.get(`${peer}/16`)!),
    ])
    const ratio = perHandoff.get('baton/256')! / perHandoff.get('baton/16')!
    const summary: SummaryRow[] = [{
      figure: 'Z3. ZooKeeper requests per hand-over, 256 ÷ 16 waiters',
      baton: `${fmtNum(perHandoff.get('baton/16')!, 2)} → ${fmtNum(perHandoff.get('baton/256')!, 2)}`,
      other: `recipe: ${fmtNum(perHandoff.get('zk-recipe/16')!, 2)} → ${fmtNum(perHandoff.get('zk-recipe/256')!, 2)}`,
      ratio: fmtRatio(ratio),
      target: '≈ 1× (no herd)',
      met: Number.isFinite(ratio) ? ratio <= 1.25 : undefined,
    }]
    const markdown = [
      '## Z3. ZooKeeper: requests per hand-over, 16 vs 256 waiters on one key',
      '',
      `N flows in this process on one key, each looping acquire → hold ${HOLD_MS} ms → release; counted over ${windowMs} ms after a ${warmupMs} ms warm-up (all flows in line); `
      + 'requests counted at node-zookeeper-client\'s request queue (every create, getChildren, exists, remove; pings excluded), '
      + 'divided by grants (every grant is a hand-over here). Independent of N means no herd.',
      '',
      table(['contender', ...sizes.map((n) => `requests / hand-over, ${n} waiters`), '256 ÷ 16'], rows),
    ].join('\n')
    return { markdown, summary }
  },
})

export const consensusScenarios: readonly Scenario[] = [etcdPairs, etcdHandoff, zkPairs, zkHandoff, zkHerd]
