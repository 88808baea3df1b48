/**
 * Weighted permits: a semaphore of 8 permits, 16 flows in this process,
 * each taking a weight from 1 to 4 in turn (acquire({ weight })), holding
 * 1 ms, releasing and taking the next at once; on memory:// and on Redis.
 * Reports grants/s, utilisation (permit-milliseconds in use over 8 × the
 * window: how much of the capacity the line keeps busy, the price of strict
 * order being the room a heavy head leaves unused while it waits for room)
 * and the median wait per weight (a heavy request is not starved: its wait
 * stays within a small factor of a light one's). The most in use at once is
 * checked against the permits in every run.
 */
import { connect } from '../../src/index.js'
import { fmtMs, fmtNum, fmtRate, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { sleep } from '../util.js'

const PERMITS = 8
const FLOWS = 16
const HOLD_MS = 1
const WEIGHTS = [1, 2, 3, 4] as const

interface RunResult {
  grantsPerSecond: number
  /** Permit-ms in use / (permits × window ms). */
  utilisation: number
  maxInUse: number
  /** Median wait (ms) per weight. */
  waits: Record<number, number>
}

async function oneRun(url: string, windowMs: number, warmupMs: number): Promise<RunResult> {
  const clients = await Promise.all([connect(url), connect(url)])
  const name = `bench/weighted/${Math.random().toString(36).slice(2, 10)}`
  let inUse = 0
  let maxInUse = 0
  let busy = 0
  let grants = 0
  const waits = new Map<number, number[]>(WEIGHTS.map((w) => [w, []]))
  const start = performance.now()
  const from = start + warmupMs
  const until = from + windowMs
  try {
    await Promise.all(Array.from({ length: FLOWS }, async (_, flow) => {
      const semaphore = clients[flow % clients.length]!.semaphore(name, { permits: PERMITS, ttl: '10s' })
      for (let i = 0; performance.now() < until; i++) {
        const weight = WEIGHTS[(flow + i) % WEIGHTS.length]!
        const asked = performance.now()
        const lease = await semaphore.acquire({ weight, wait: '30s' })
        const granted = performance.now()
        inUse += weight
        maxInUse = Math.max(maxInUse, inUse)
        await sleep(HOLD_MS)
        inUse -= weight
        const done = performance.now()
        await lease.release()
        // Only what falls inside the window counts.
        const inWindow = Math.max(0, Math.min(done, until) - Math.max(granted, from))
        busy += weight * inWindow
        if (granted >= from && granted < until) {
          grants++
          waits.get(weight)!.push(granted - asked)
        }
      }
    }))
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
  return {
    grantsPerSecond: (grants / windowMs) * 1000,
    utilisation: busy / (PERMITS * windowMs),
    maxInUse,
    waits: Object.fromEntries(WEIGHTS.map((w) => [w, median(waits.get(w)!)])),
  }
}

export const weighted: Scenario = {
  id: 'weighted',
  title: `Weighted permits: ${PERMITS} permits, ${FLOWS} flows taking weights 1–4 in turn, hold ${HOLD_MS} ms (memory, Redis)`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 1)
    const windowMs = ctx.pick(2000, 800)
    const warmupMs = ctx.pick(300, 100)
    const stores = [['memory', 'memory://bench-weighted'], ['redis', ctx.redisUrl]] as const
    const rows: string[][] = []
    const summary: SummaryRow[] = []
    for (const [store, url] of stores) {
      const results: RunResult[] = []
      for (let run = 0; run < runs; run++) results.push(await oneRun(url, windowMs, warmupMs))
      const maxInUse = Math.max(...results.map((r) => r.maxInUse))
      if (maxInUse > PERMITS) throw new Error(`${store}: ${maxInUse} permits in use at once, more than ${PERMITS}`)
      const rate = median(results.map((r) => r.grantsPerSecond))
      const utilisation = median(results.map((r) => r.utilisation))
      const waits = WEIGHTS.map((w) => median(results.map((r) => r.waits[w]!)))
      ctx.log(`  ${store}: ${fmtRate(rate)} grants, utilisation ${(utilisation * 100).toFixed(0)} %`)
      rows.push([store, fmtRate(rate), `${(utilisation * 100).toFixed(0)} %`, String(maxInUse), ...waits.map(fmtMs), fmtNum(waits[3]! / Math.max(waits[0]!, 0.001))])
      summary.push({
        figure: `R2. weighted permits (${store})`,
        baton: `${fmtRate(rate)} grants, ${(utilisation * 100).toFixed(0)} % used`,
        other: '', ratio: '', target: `≤ ${PERMITS} in use`, met: maxInUse <= PERMITS,
      })
    }
    const markdown = [
      `## ${this.title}`,
      '',
      table(['store', 'grants/s', 'utilisation', 'most in use', 'wait w=1', 'w=2', 'w=3', 'w=4', 'w=4 / w=1'], rows),
      '',
      `Median of ${runs} run(s) of ${windowMs} ms. Utilisation: permit-ms held / (${PERMITS} × window). `
      + 'The line is strict FIFO, so a weight-4 head leaves up to 3 permits idle until enough are released: '
      + 'that idle room is the price of never starving it.',
    ].join('\n')
    return { markdown, summary }
  },
}
