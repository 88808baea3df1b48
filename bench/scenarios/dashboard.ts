/**
 * The dashboard with 10,000 locks and 200 grants/s: time to first render
 * (navigation start → the first table with data) and the page's CPU use
 * (Chromium's TaskDuration over the window), with the event backlog sampled
 * throughout. Headless Chromium against a real `baton serve` on the bench's
 * Redis.
 */
import { connect, type Lease } from '../../src/index.js'
import { startBatonServer } from '../../test/harness/baton-server.js'
import { launchChromium } from '../../test/harness/browser.js'
import { fmtInt, fmtMs, fmtNum, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult } from '../types.js'
import { sleep } from '../util.js'

const LOCKS = 10_000
const RATE = 200
const FIRST_RENDER_TARGET_MS = 1000

interface PageState {
  firstRenderMs: number | undefined
  backlog: number
  applied: number
  locks: number
}

export const dashboard: Scenario = {
  id: 'dashboard',
  title: '13. Dashboard: 10,000 locks and 200 grants/s',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const server = await startBatonServer(['--store', ctx.redisUrl])
    const baton = await connect(ctx.redisUrl)
    const browser = await launchChromium()
    const leases: Lease[] = []
    try {
      ctx.log(`  seeding ${LOCKS} locks`)
      for (let i = 0; i < LOCKS; i += 500) {
        leases.push(...await Promise.all(Array.from({ length: Math.min(500, LOCKS - i) }, (_, j) =>
          baton.mutex(`dash-bench/${String(i + j).padStart(5, '0')}`, { ttl: '10m' }).acquire())))
      }
      const page = await browser.context.newPage()
      const cdp = await browser.context.newCDPSession(page)
      await cdp.send('Performance.enable')
      // The page's CSP forbids eval: page functions are real functions (no DOM types here: `any`).
      const state = () => page.evaluate(() => {
        const d = (globalThis as any).batonDashboard
        return { firstRenderMs: d.firstRenderMs, backlog: d.backlog, applied: d.applied, locks: d.locks } as PageState
      })

      const firstRenders: number[] = []
      for (let load = 0; load < ctx.pick(3, 1); load++) {
        await page.goto(server.base)
        await page.waitForFunction(() => (globalThis as any).batonDashboard?.firstRenderMs !== undefined, undefined, { timeout: 30_000 })
        firstRenders.push((await state()).firstRenderMs!)
      }
      await page.waitForFunction((n) => (globalThis as any).batonDashboard.locks >= n, LOCKS, { timeout: 60_000 })
      await page.waitForSelector('#conn[data-state="live"]')
      const firstRender = Math.min(...firstRenders)

      const taskSeconds = async () => {
        const { metrics } = await cdp.send('Performance.getMetrics')
        return metrics.find((m) => m.name === 'TaskDuration')?.value ?? NaN
      }
      const windowMs = ctx.pick(10_000, 4_000)
      const before = await state()
      const cpu0 = await taskSeconds()
      const t0 = performance.now()
      let grants = 0
      let failures = 0
      const backlog: number[] = []
      const sampler = setInterval(() => void state().then((s) => backlog.push(s.backlog), () => undefined), 200)
      // Paced load: RATE acquire+release pairs per second through the server's API, on 50 names.
      const load = async (worker: number, workers: number) => {
        for (let n = worker; ; n += workers) {
          const due = t0 + (n * 1000) / RATE
          if (due - t0 >= windowMs) return
          const wait = due - performance.now()
          if (wait > 0) await sleep(wait)
          try {
            const name = encodeURIComponent(`dash-load/${n % 50}`)
            const res = await fetch(`${server.base}/v1/locks/${name}/acquire`, {
              method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl: '10s', wait: '5s' }),
            })
            if (!res.ok) throw new Error(`acquire: ${res.status}`)
            const grant = (await res.json()) as { leaseId: string }
            grants++
            const released = await fetch(`${server.base}/v1/leases/${encodeURIComponent(grant.leaseId)}`, { method: 'DELETE' })
            if (!released.ok) throw new Error(`release: ${released.status}`)
          } catch {
            failures++
          }
        }
      }
      await Promise.all(Array.from({ length: 32 }, (_, w) => load(w, 32)))
      const elapsed = performance.now() - t0
      const cpu1 = await taskSeconds()
      clearInterval(sampler)
      await sleep(500)
      const after = await state()
      const cpuShare = ((cpu1 - cpu0) * 1000) / elapsed
      const applied = after.applied - before.applied
      const rows = [
        ['first render (navigation → table with data), best of ' + firstRenders.length, fmtMs(firstRender)],
        ['grants through the API in the window', `${fmtInt(grants)} (${fmtNum(grants / (elapsed / 1000), 0)}/s), ${failures} failed`],
        ['events the page applied (grant + release each)', `${fmtInt(applied)} of ${fmtInt(grants * 2)}`],
        ['page CPU (Chromium TaskDuration / wall time)', `${fmtNum(cpuShare * 100, 1)}%`],
        ['event backlog, sampled every 200 ms: max / last', `${Math.max(0, ...backlog)} / ${after.backlog}`],
      ]
      const markdown = [
        `## ${this.title}`,
        '',
        `${LOCKS.toLocaleString('en-US')} locks held in Redis, listed by a \`baton serve\` in front of it; the page loads in headless Chromium, `
        + `then ${RATE} acquire+release pairs per second go through the server's API for ${windowMs / 1000} s.`,
        '',
        table(['figure', 'value'], rows),
      ].join('\n')
      return {
        markdown,
        summary: [
          {
            figure: 'dashboard first render, 10,000 locks', baton: fmtMs(firstRender), other: '', ratio: '',
            target: `≤ ${FIRST_RENDER_TARGET_MS} ms`, met: firstRender <= FIRST_RENDER_TARGET_MS,
          },
          {
            figure: `dashboard at ${RATE} grants/s: page CPU, backlog`, baton: `${fmtNum(cpuShare * 100, 1)}% CPU, backlog ≤ ${Math.max(0, ...backlog)}`,
            other: `${fmtInt(applied)} of ${fmtInt(grants * 2)} events applied`, ratio: '', target: 'no growing backlog',
            met: after.backlog === 0 && applied >= grants * 2,
          },
        ],
      }
    } finally {
      await browser.close()
      await Promise.allSettled(leases.map((l) => l.release()))
      await baton.close()
      await server.stop()
    }
  },
}
