/**
 * E1. Leader change after a kill: a leader of `baton.election()` dies
 * without resigning (kill -9 of its process; on memory://, which lives in
 * one process, its client closed without resigning), a candidate already
 * campaigns and an observer follows the election. Measured from the kill
 * to the candidate's campaign resolving (it leads) and to observe()
 * showing it. The dead leader's lease must run out first, so the time is
 * its remaining lease (read from the store just before the kill) plus
 * baton's detection; the latter is the figure ("overhead"). A resign, by
 * contrast, hands over at once: its time is measured too.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { connect, type Baton } from '../../src/index.js'
import { fmtMs, median, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { alternate, failureNote, oks, runTag, withTimeout } from '../util.js'

const TTL_MS = 1000
/** Detection beyond the dead leader's lease end, p50 target: within a third of the ttl (one renewal period). */
const TARGET_OVERHEAD_MS = TTL_MS / 3

interface ChangeRun {
  /** kill → the candidate leads. */
  electedMs: number
  /** kill → observe() shows the new leader. */
  observedMs: number
  /** What was left of the dead leader's lease at the kill (by the store's clock, as inspect shows it). */
  leftMs: number
  /** resign → the next candidate leads. */
  resignMs: number
}

/** A leader in another process, for kill -9 (cross-process stores). */
async function leaderProcess(url: string, name: string): Promise<{ kill: () => void }> {
  const index = new URL('../../src/index.js', import.meta.url).href
  const code = `const { connect } = await import(${JSON.stringify(index)});
const baton = await connect(${JSON.stringify(url)});
const leadership = await baton.election(${JSON.stringify(name)}, { ttl: ${TTL_MS} }).campaign({ value: 'doomed' });
console.log('leader ' + leadership.token); await new Promise(() => {})`
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  const lead = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => { if (line.startsWith('leader ')) resolve() })
    child.once('exit', (codeOrNull) => reject(new Error(`the leader process exited (${codeOrNull}) before leading`)))
  })
  await withTimeout(lead, 15_000, 'the leader process')
  return { kill: () => child.kill('SIGKILL') }
}

/** A leader in this process whose client is closed without resigning (memory://: no other process shares the store). */
async function leaderClient(url: string, name: string): Promise<{ kill: () => void }> {
  const baton = await connect(url)
  await baton.election(name, { ttl: TTL_MS }).campaign({ value: 'doomed' })
  return { kill: () => void baton.close() }
}

async function oneChange(url: string, name: string, crossProcess: boolean): Promise<ChangeRun> {
  const [candidate, watcher, third]: Baton[] = [await connect(url), await connect(url), await connect(url)]
  const stop = new AbortController()
  try {
    const leader = await (crossProcess ? leaderProcess(url, name) : leaderClient(url, name))
    const feed = watcher.election(name).observe({ signal: stop.signal })[Symbol.asyncIterator]()
    const first = (await feed.next()).value
    const campaign = candidate.election(name, { ttl: TTL_MS }).campaign({ value: 'next' })
    for (let i = 0; i < 400 && ((await watcher.inspect(name))?.waiters.length ?? 0) === 0; i++) await new Promise((r) => setTimeout(r, 5))
    const expiresAt = (await watcher.inspect(name))?.holders[0]?.expiresAt ?? Date.now()
    const killedAt = performance.now()
    const leftMs = Math.max(0, expiresAt - Date.now())
    leader.kill()
    let observedMs = NaN
    const observed = (async () => {
      for (;;) {
        const step = await feed.next()
        if (step.done) return
        if (step.value && step.value.value === 'next') return void (observedMs = performance.now() - killedAt)
      }
    })()
    const term = await withTimeout(campaign, TTL_MS * 10, 'the candidate after the kill')
    const electedMs = performance.now() - killedAt
    await withTimeout(observed, TTL_MS * 10, 'observe() after the kill')
    if (first?.value !== 'doomed') throw new Error('the observer did not start with the doomed leader')
    // The contrast: a resign hands over at once.
    const next = third.election(name, { ttl: TTL_MS }).campaign({ value: 'third' })
    for (let i = 0; i < 400 && ((await watcher.inspect(name))?.waiters.length ?? 0) === 0; i++) await new Promise((r) => setTimeout(r, 5))
    const resignedAt = performance.now()
    await term.resign()
    const thirdTerm = await withTimeout(next, TTL_MS * 10, 'the third candidate after a resign')
    const resignMs = performance.now() - resignedAt
    await thirdTerm.resign()
    return { electedMs, observedMs, leftMs, resignMs }
  } finally {
    stop.abort()
    await Promise.allSettled([candidate, watcher, third].map((b) => b.close()))
  }
}

export const election: Scenario = {
  id: 'election',
  title: `E1. Leader change after a kill (ttl ${TTL_MS} ms): memory and Redis`,
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const runs = ctx.pick(5, 2)
    const stores = [
      { id: 'memory', label: 'memory://', url: `memory://bench-election-${runTag}`, crossProcess: false },
      { id: 'redis', label: 'redis://', url: ctx.redisUrl, crossProcess: true },
    ]
    const results = await alternate(runs, stores, (store, run) => oneChange(store.url, `bench/${runTag}/election/${store.id}/${run}`, store.crossProcess), {
      timeoutMs: TTL_MS * 30 + 30_000, log: ctx.log,
    })
    const summary: SummaryRow[] = []
    const rows = stores.map((store) => {
      const outcomes = results.get(store.id)!
      const note = failureNote(outcomes)
      const ok = oks(outcomes)
      if (ok.length === 0) return [store.label, note]
      const elected = median(ok.map((r) => r.electedMs))
      const observed = median(ok.map((r) => r.observedMs))
      const left = median(ok.map((r) => r.leftMs))
      const overhead = median(ok.map((r) => r.electedMs - r.leftMs))
      const resign = median(ok.map((r) => r.resignMs))
      const met = Number.isFinite(overhead) ? overhead <= TARGET_OVERHEAD_MS : undefined
      summary.push(
        {
          figure: `R3. ${store.label} leader change after kill -9${store.crossProcess ? '' : ' (client closed)'}, p50 (ttl ${TTL_MS} ms)`,
          baton: fmtMs(elected), other: `lease left at the kill ${fmtMs(left)}`, ratio: '—', target: '≤ ttl + detection', met: undefined,
        },
        {
          figure: `R3. ${store.label} detection beyond the lease's end, p50`,
          baton: fmtMs(overhead), other: `resign → next leader ${fmtMs(resign)}`, ratio: '—', target: `≤ ${fmtMs(TARGET_OVERHEAD_MS)}`, met,
        },
      )
      return [store.label, fmtMs(elected), fmtMs(observed), fmtMs(left), fmtMs(overhead), fmtMs(resign), note]
    })
    const markdown = [
      `## ${this.title}`,
      '',
      table(['store', 'kill → new leader', 'kill → observe() sees it', 'lease left at the kill', 'detection beyond the lease', 'resign → next leader', 'notes'], rows),
      '',
      `Median of ${runs} runs. The leader campaigns with ttl ${TTL_MS} ms and is killed (kill -9 of its process; memory:// lives in one process, so its client is closed without resigning); `
        + 'a candidate already waits in line and an observer follows the election. The dead leader\'s lease must end first (no store can tell a dead client from a slow one sooner), '
        + 'so "detection" is the time beyond that end: Redis expires keys passively, so the waiting candidate\'s attempt at the lease end and the observer\'s read at that end find it; '
        + 'memory hands over from its own expiry timer. A resign hands over in the same store operation.',
    ].join('\n')
    return { markdown, summary }
  },
}
