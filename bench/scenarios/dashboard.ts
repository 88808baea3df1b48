/**
 * The dashboard with 10,000 locks and 200 grants/s: time to first render
 * (navigation start → the first table with data) and the page's CPU use
 * (Chromium's TaskDuration over the window), with the event backlog sampled
 * throughout. Headless Chromium against a real `baton serve` on the bench's
 * Redis.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { connect, type Lease } from '../../src/index.js'
import { startBatonServer } from '../../test/harness/baton-server.js'
import { launchChromium } from '../../test/harness/browser.js'
import { startRedis } from '../../test/harness/servers.js'
import { fmtInt, fmtMs, fmtNum, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult } from '../types.js'
import { sleep } from '../util.js'

const LOCKS = 10_000
const RATE = 200
const FIRST_RENDER_TARGET_MS = 1000

/** Linux clock ticks per second (USER_HZ), what /proc/<pid>/stat counts CPU time in. */
const TICKS_PER_SECOND = 100

/**
 * CPU time (ms) used so far by the Chromium whose profile is `profile`: its
 * renderer processes (the page) and all its processes (renderer, GPU or
 * software compositing, network, browser). From /proc, so time a process
 * waited for a CPU on a busy machine does not count as work.
 */
function chromiumCpuMs(profile: string): { renderer: number; all: number } {
  const stats = new Map<number, { ppid: number; cpu: number; cmdline: string }>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      stats.set(Number(entry), { ppid: Number(fields[1]), cpu: Number(fields[11]) + Number(fields[12]), cmdline })
    } catch { /* gone meanwhile */ }
  }
  const ours = new Set([...stats].filter(([, s]) => s.cmdline.includes(profile) && !s.cmdline.includes('--type=')).map(([pid]) => pid))
  const inTree = (pid: number): boolean => {
    for (let at = pid, depth = 0; at > 1 && depth < 10; at = stats.get(at)?.ppid ?? 0, depth++) if (ours.has(at)) return true
    return false
  }
  let renderer = 0
  let all = 0
  for (const [pid, s] of stats) {
    if (!inTree(pid)) continue
    all += s.cpu
    if (s.cmdline.includes('--type=renderer')) renderer += s.cpu
  }
  return { renderer: (renderer * 1000) / TICKS_PER_SECOND, all: (all * 1000) / TICKS_PER_SECOND }
}

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
    // A redis-server of its own: listing walks the whole keyspace, and the
    // scenarios before this one leave ~200,000 idle names (each name's
    // counter is kept for fenceTtl) in the shared one.
    const redis = await startRedis()
    const server = await startBatonServer(['--store', redis.url])
    const baton = await connect(redis.url)
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

      // What the first render waits for at least: the server's first page of the list.
      const listStarted = performance.now()
      const firstPage = await fetch(`${server.base}/v1/locks?limit=1000`)
      await firstPage.json()
      const firstPageMs = performance.now() - listStarted
      const firstRenders: number[] = []
      for (let load = 0; load < ctx.pick(2, 1); load++) {
        await page.goto(server.base)
        await page.waitForFunction(() => (globalThis as any).batonDashboard?.firstRenderMs !== undefined, undefined, { timeout: 30_000 })
        firstRenders.push((await state()).firstRenderMs!)
        // Let the page finish listing, so the next load does not share the server with this one's list.
        await page.waitForFunction((n) => (globalThis as any).batonDashboard.locks >= n, LOCKS, { timeout: 180_000 })
      }
      await page.waitForSelector('#conn[data-state="live"]')
      const firstRender = Math.min(...firstRenders)

      const taskSeconds = async () => {
        const { metrics } = await cdp.send('Performance.getMetrics')
        return metrics.find((m) => m.name === 'TaskDuration')?.value ?? NaN
      }
      const windowMs = ctx.pick(10_000, 4_000)
      const before = await state()
      const cpu0 = await taskSeconds()
      const proc0 = chromiumCpuMs(browser.profile)
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
      const proc1 = chromiumCpuMs(browser.profile)
      clearInterval(sampler)
      await sleep(500)
      const after = await state()
      const cpuShare = ((cpu1 - cpu0) * 1000) / elapsed
      const rendererShare = (proc1.renderer - proc0.renderer) / elapsed
      const browserShare = (proc1.all - proc0.all) / elapsed
      const applied = after.applied - before.applied
      const rows = [
        ['first render (navigation → table with data), best of ' + firstRenders.length, fmtMs(firstRender)],
        ['of which the server\'s first list page (GET /v1/locks?limit=1000, timed alone)', fmtMs(firstPageMs)],
        ['grants through the API in the window', `${fmtInt(grants)} (${fmtNum(grants / (elapsed / 1000), 0)}/s), ${failures} failed`],
        ['events the page applied (grant + release each)', `${fmtInt(applied)} of ${fmtInt(grants * 2)}`],
        ['page CPU: renderer process CPU time / wall time', `${fmtNum(rendererShare * 100, 1)}% of one core`],
        ['all of Chromium (renderer, compositing, network, browser)', `${fmtNum(browserShare * 100, 1)}% of one core`],
        ['main-thread busy time (TaskDuration / wall; includes waiting for a CPU)', `${fmtNum(cpuShare * 100, 1)}%`],
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
            figure: `dashboard at ${RATE} grants/s: page CPU, backlog`, baton: `${fmtNum(rendererShare * 100, 1)}% of a core, backlog ≤ ${Math.max(0, ...backlog)}`,
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
      await redis.stop()
    }
  },
}
