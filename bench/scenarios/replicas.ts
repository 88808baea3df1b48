/**
 * R4. The cost of replica acknowledgement (`?replicas=N`): uncontended
 * acquire+release pairs per second and hand-over p50 with replicas none, 1
 * and 2, in one run, against a master with two replicas of its own (local
 * loopback: the acknowledgement is one master–replica round trip here, a
 * network's round trip in production).
 */
import { connect } from '../../src/index.js'
import { startRedis } from '../../test/harness/servers.js'
import { fmtMs, fmtRate, median, table } from '../report.js'
import type { Scenario, SummaryRow } from '../types.js'

const SETTINGS = [
  { label: 'none', query: '' },
  { label: 'replicas=1', query: '?replicas=1&replicaTimeout=500ms' },
  { label: 'replicas=2', query: '?replicas=2&replicaTimeout=500ms' },
] as const

async function pairsPerSecond(url: string, durationMs: number): Promise<number> {
  const baton = await connect(url)
  const lock = baton.mutex('bench/replicas/uncontended')
  try {
    for (let i = 0; i < 50; i++) await (await lock.acquire()).release() // warm-up
    let pairs = 0
    const started = performance.now()
    while (performance.now() - started < durationMs) {
      await (await lock.acquire()).release()
      pairs++
    }
    return pairs / ((performance.now() - started) / 1000)
  } finally {
    await baton.close()
  }
}

/** From the holder's release call to the waiter's acquire resolving, `rounds` times. */
async function handoverP50(url: string, rounds: number): Promise<number> {
  const [a, b] = [await connect(url), await connect(url)]
  const name = 'bench/replicas/handover'
  const times: number[] = []
  try {
    for (let i = 0; i < rounds; i++) {
      const held = await a.mutex(name).acquire()
      const waiting = b.mutex(name).acquire({ wait: '5s' })
      // Let the waiter join the line before the release.
      await new Promise((resolve) => setTimeout(resolve, 20))
      const released = performance.now()
      await held.release()
      const lease = await waiting
      times.push(performance.now() - released)
      await lease.release()
    }
    return median(times)
  } finally {
    await Promise.all([a.close(), b.close()])
  }
}

export const replicasScenario: Scenario = {
  id: 'replicas',
  title: 'R4. Replica acknowledgement (?replicas=N): pairs/s and hand-over, master with 2 replicas (Redis)',
  async run(ctx) {
    const master = await startRedis()
    const replicas = await Promise.all([0, 1].map(() => startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] })))
    try {
      // Wait until both replicas acknowledge (initial sync done).
      const probe = await connect(master.url + '?replicas=2&replicaTimeout=500ms')
      for (let i = 0; ; i++) {
        const ok = await probe.mutex('bench/replicas/probe').acquire().then((l) => l.release().then(() => true), () => false)
        if (ok) break
        if (i > 100) throw new Error('the replicas never acknowledged')
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      await probe.close()
      const durationMs = ctx.pick(2000, 400)
      const rounds = ctx.pick(200, 30)
      const results = []
      for (const setting of SETTINGS) {
        ctx.log(`replicas: ${setting.label}`)
        const url = master.url + setting.query
        results.push({ ...setting, pairs: await pairsPerSecond(url, durationMs), handover: await handoverP50(url, rounds) })
      }
      const none = results[0]!
      const rows = results.map((r) => [r.label, fmtRate(r.pairs), `${(r.pairs / none.pairs).toFixed(2)}×`, fmtMs(r.handover)])
      const summary: SummaryRow[] = results.slice(1).map((r) => ({
        figure: `R4. ${r.label}: uncontended pairs/s, hand-over p50`,
        baton: `${fmtRate(r.pairs)}, ${fmtMs(r.handover)}`,
        other: `none: ${fmtRate(none.pairs)}, ${fmtMs(none.handover)}`,
        ratio: `${(r.pairs / none.pairs).toFixed(2)}×`,
        target: '—',
        met: undefined,
      }))
      const markdown = [
        `## ${this.title}`,
        '',
        table(['setting', 'uncontended pairs/s (1 flow)', 'vs none', 'hand-over p50'], rows),
        '',
        `One flow, ${durationMs} ms per setting; hand-over: median of ${rounds} releases to a waiting client. `
          + 'Each grant with replicas=N adds one pipelined round trip (the confirming write and WAIT) and the replicas\' acknowledgement; '
          + 'a hand-over adds the new holder\'s confirming attempt.',
        '',
      ].join('\n')
      return { markdown, summary }
    } finally {
      await Promise.allSettled([master.stop(), ...replicas.map((r) => r.stop())])
    }
  },
}
