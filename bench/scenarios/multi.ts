/**
 * Several locks at once (issue 20): `baton.multi()` of 3 names against the
 * same 3 names taken as 3 mutexes one after another (in the same global
 * order, so that it can not deadlock either), on memory:// and Redis.
 *
 * - one flow: sets per second and the latency of one acquire+release of the
 *   whole set; what multi() adds over doing it by hand is its bookkeeping
 *   (sorting, one combined signal, watchdog renewals) and no round trip;
 * - 4 flows contending for the same 3 names: sets per second. Every flow of
 *   the "by hand" contender also takes the names in byte order; a caller
 *   that listed them in its own order could deadlock there, which is what
 *   multi() exists to rule out.
 */
import { connect, type Baton } from '../../src/index.js'
import { fmtMs, fmtRate, fmtRatio, median, Samples, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, pairedRatios, runTag } from '../util.js'

const FLOWS = 4
const TTL = '10s'

interface Measured {
  sets: number
  p50?: number
  p99?: number
}

type Way = 'multi' | 'sequential'
interface Contender { readonly id: string; readonly way: Way; readonly flows: number }

/** One acquire+release of the whole set, the way `way` does it. */
async function takeSet(baton: Baton, way: Way, names: readonly string[]): Promise<void> {
  if (way === 'multi') {
    const lease = await baton.multi(names, { ttl: TTL }).acquire({ wait: '30s' })
    await lease.release()
    return
  }
  const leases = []
  for (const name of names) leases.push(await baton.mutex(name, { ttl: TTL }).acquire({ wait: '30s', autoExtend: true }))
  for (const lease of leases.reverse()) await lease.release()
}

async function measure(clients: readonly Baton[], c: Contender, names: readonly string[], durationMs: number): Promise<Measured> {
  const latencies = new Samples()
  let sets = 0
  const started = performance.now()
  const until = started + durationMs
  await Promise.all(Array.from({ length: c.flows }, async (_, flow) => {
    const baton = clients[flow % clients.length]!
    // Each flow lists the names in its own order: multi() sorts them; the by-hand contender must (see above).
    const listed = c.way === 'multi' ? rotate(names, flow) : [...names].sort()
    while (performance.now() < until) {
      const t0 = performance.now()
      await takeSet(baton, c.way, listed)
      if (c.flows === 1) latencies.push(performance.now() - t0)
      sets++
    }
  }))
  const rate = (sets / (performance.now() - started)) * 1000
  return c.flows === 1 ? { sets: rate, p50: latencies.percentile(50), p99: latencies.percentile(99) } : { sets: rate }
}

const rotate = <T>(list: readonly T[], by: number): T[] => list.map((_, i) => list[(i + by) % list.length]!)

export const multi: Scenario = {
  id: 'multi',
  title: 'Multi-lock of 3 names vs 3 sequential locks (memory, Redis)',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 2)
    const durationMs = ctx.pick(1000, 300)
    const contenders: Contender[] = [
      { id: 'multi, 1 flow', way: 'multi', flows: 1 },
      { id: '3 sequential, 1 flow', way: 'sequential', flows: 1 },
      { id: `multi, ${FLOWS} flows`, way: 'multi', flows: FLOWS },
      { id: `3 sequential, ${FLOWS} flows`, way: 'sequential', flows: FLOWS },
    ]
    const sections: string[] = []
    const summary: SummaryRow[] = []
    for (const [store, url] of [['memory', 'memory://'], ['Redis', ctx.redisUrl]] as const) {
      ctx.log(`  ${store}`)
      // Two clients, as two processes' worth of flows would be (the memory store is one per process: shared).
      const clients = [await connect(url), await connect(url)]
      try {
        const namesOf = (c: Contender, run: number) => ['a', 'b', 'c'].map((n) => `bench/${runTag}/multi/${c.id.replace(/\W+/g, '-')}/${run}/${n}`)
        for (const c of contenders) await measure(clients, c, namesOf(c, -1), ctx.pick(300, 100)) // warm-up
        const results = await alternate(runs, contenders, (c, run) => measure(clients, c, namesOf(c, run), durationMs), {
          timeoutMs: durationMs + 30_000, log: ctx.log,
        })
        const rows = contenders.map((c) => {
          const ok = oks(results.get(c.id))
          const baseline = contenders.find((b) => b.flows === c.flows && b.way === 'sequential')!
          const ratios = pairedRatios(results.get(c.id), results.get(baseline.id), (m) => m.sets)
          return [
            c.id,
            ok.length ? fmtRate(median(ok.map((m) => m.sets))) : failureNote(results.get(c.id)),
            c.flows === 1 && ok.length ? fmtMs(median(ok.map((m) => m.p50!))) : '',
            c.flows === 1 && ok.length ? fmtMs(median(ok.map((m) => m.p99!))) : '',
            c === baseline || ratios.length === 0 ? '' : fmtRatio(median(ratios)),
          ]
        })
        sections.push(`### ${store}\n\n${table(['contender', 'sets/s', 'p50', 'p99', 'vs 3 sequential'], rows)}`)
        for (const flows of [1, FLOWS]) {
          const [m, s] = (['multi', 'sequential'] as const).map((way) => contenders.find((c) => c.way === way && c.flows === flows)!)
          const ratios = pairedRatios(results.get(m!.id), results.get(s!.id), (x) => x.sets)
          const value = (c: Contender) => oks(results.get(c.id)).map((x) => x.sets)
          // On memory:// a lock costs about a microsecond, so the set's own bookkeeping (a few µs) shows as a
          // ratio; the target is for a store with a network, where it is lost in the round trips.
          const networked = store !== 'memory'
          summary.push({
            figure: `R1. multi-lock of 3 names, ${flows} flow${flows > 1 ? 's' : ''} (${store}), sets/s`,
            baton: value(m!).length ? fmtRate(median(value(m!))) : failureNote(results.get(m!.id)),
            other: value(s!).length ? `3 sequential: ${fmtRate(median(value(s!)))}` : failureNote(results.get(s!.id)),
            ratio: ratios.length ? fmtRatio(median(ratios)) : '',
            target: networked ? '≥ 0.9×' : '(bookkeeping only)',
            met: networked && ratios.length ? median(ratios) >= 0.9 : undefined,
          })
        }
      } finally {
        await Promise.all(clients.map((c) => c.close()))
      }
    }
    const markdown = [
      `## ${this.title}`,
      '',
      '`baton.multi([a, b, c]).acquire()` + `lease.release()` against `mutex(a)`, `mutex(b)`, `mutex(c)` acquired one after another ' +
        '(`autoExtend`, as multi() renews its parts) and released in reverse, on the same client. ' +
        `With ${FLOWS} flows (over 2 clients) all want the same 3 names; each multi flow lists them in another order, ` +
        'while the sequential flows must all use byte order (any other order could deadlock). Median of runs; ratio: median of per-run ratios. ' +
        'On memory:// a lock takes about a microsecond, so what the set adds (sorting, a loss callback per part, one signal for the ' +
        'parts still to take) shows as a ratio; on Redis it is lost in the round trips.',
      '',
      ...sections.flatMap((s) => [s, '']),
    ].join('\n')
    return { markdown, summary }
  },
}
