/**
 * 11. The lock server (`baton serve`, a child process) under HTTP load from
 * autocannon with keep-alive:
 * - acquire+release pairs/s over 64 connections on the embedded store,
 *   against a bare node:http server answering a fixed JSON body (same load
 *   generator with the same chained requests, same run; a pair is two requests);
 * - the same with the Redis store, against the library on Redis directly
 *   (64 flows in this process);
 * - long-poll hand-over: a release through the server until the waiting
 *   request has its answer (p50);
 * - server heap per held lock with 100k held (memory store), after full GCs.
 */
import autocannon, { type Request } from 'autocannon'
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { connect } from '../../src/index.js'
import { startBatonServer, type BatonServer } from '../../test/harness/baton-server.js'
import { fmtBytes, fmtMet, fmtMs, fmtRate, fmtRatio, median, Samples, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { runTag } from '../util.js'

const CONNECTIONS = 64
const JSON_HEADERS = { 'content-type': 'application/json' }

/** requests/s of autocannon on `requests` for `seconds`. */
async function load(url: string, seconds: number, requests?: Request[]): Promise<number> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, ...(requests ? { requests } : {}) })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${result.errors} errors, ${result.non2xx} non-2xx answers under load`)
  return result.requests.total / seconds
}

/** acquire, then release the lease the acquire answered; one lock name per connection. */
function pairRequests(prefix: string): Request[] {
  let next = 0
  return [
    {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"ttl":"10s"}',
      setupRequest(request, context) {
        context.name ??= `${prefix}/${next++}`
        return { ...request, path: `/v1/locks/${encodeURIComponent(context.name as string)}/acquire` }
      },
      onResponse(_status, body, context) {
        context.leaseId = (JSON.parse(body) as { leaseId: string }).leaseId
      },
    },
    {
      method: 'DELETE',
      setupRequest: (request, context) => ({ ...request, path: `/v1/leases/${context.leaseId as string}` }),
    },
  ]
}

async function startBaseline(): Promise<{ url: string; child: ChildProcess }> {
  const script = fileURLToPath(new URL('../http-baseline.js', import.meta.url))
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(Number(line.split(' ')[1])))
    child.once('exit', () => reject(new Error('the baseline server exited')))
  })
  return { url: `http://127.0.0.1:${port}`, child }
}

/** The library on Redis directly: 64 flows, one name each, acquire+release pairs for `seconds`. */
async function libraryPairs(redisUrl: string, seconds: number): Promise<number> {
  const baton = await connect(redisUrl)
  let pairs = 0
  const stopAt = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: CONNECTIONS }, async (_, i) => {
    const lock = baton.mutex(`bench-lib/${runTag}/${i}`, { ttl: '10s' })
    while (performance.now() < stopAt) {
      const lease = await lock.acquire({ wait: '30s' })
      await lease.release()
      pairs++
    }
  }))
  await baton.close()
  return pairs / seconds
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(base + path, { method, headers: JSON_HEADERS, ...(body ? { body: JSON.stringify(body) } : {}) })
  return response.json()
}

/** Release → the waiting request's answer, through the server, `count` times. */
async function handover(server: BatonServer, count: number): Promise<Samples> {
  const samples = new Samples()
  const path = `/v1/locks/handover-${runTag}/acquire`
  let held = await call(server.base, 'POST', path, { ttl: '10s' })
  for (let i = 0; i < count; i++) {
    const waiting = call(server.base, 'POST', path, { ttl: '10s', wait: '10s' })
    // Let the waiter reach the line, then time the release until its answer.
    for (;;) {
      const view = await call(server.base, 'GET', `/v1/locks/handover-${runTag}`)
      if (view.waiters?.length === 1) break
    }
    const t0 = performance.now()
    await fetch(`${server.base}/v1/leases/${held.leaseId}`, { method: 'DELETE' }).then((r) => r.arrayBuffer())
    held = await waiting
    samples.push(performance.now() - t0)
  }
  await call(server.base, 'DELETE', `/v1/leases/${held.leaseId}`)
  return samples
}

/** One plain request's round trip (GET /healthz), for scale: a hand-over is a release request plus the wake-up. */
async function roundTrip(base: string, count: number): Promise<Samples> {
  const samples = new Samples()
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    await fetch(`${base}/healthz`).then((r) => r.arrayBuffer())
    samples.push(performance.now() - t0)
  }
  return samples
}

/** Server heap growth per held lock with `count` held, measured after full GCs in a child process. */
async function memoryPerLock(count: number): Promise<number> {
  const script = fileURLToPath(new URL('../server-memory.js', import.meta.url))
  const child = spawn(process.execPath, ['--expose-gc', script, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] })
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`the memory probe exited with ${code}`)))
  })
  return Number(line.split(' ')[1])
}

export const server: Scenario = {
  id: 'server',
  title: '11. Lock server over HTTP (autocannon, keep-alive, 64 connections)',
  async run(ctx: BenchContext): Promise<ScenarioResult> {
    const seconds = ctx.pick(5, 2)
    const runs = ctx.pick(3, 1)
    const memoryServer = await startBatonServer()
    const redisServer = await startBatonServer(['--store', ctx.redisUrl])
    const baseline = await startBaseline()
    const rows: SummaryRow[] = []
    try {
      const bare: number[] = []
      const memPairs: number[] = []
      const redisPairs: number[] = []
      const libPairs: number[] = []
      for (let run = 0; run < runs; run++) {
        ctx.log(`  run ${run + 1}/${runs}`)
        // The same chained requests (acquire, then DELETE the lease id it answered), so the load generator does the same work.
        bare.push(await load(baseline.url, seconds, pairRequests('bare')))
        memPairs.push((await load(memoryServer.base, seconds, pairRequests(`pairs-${runTag}-${run}`))) / 2)
        redisPairs.push((await load(redisServer.base, seconds, pairRequests(`pairs-${runTag}-${run}`))) / 2)
        libPairs.push(await libraryPairs(ctx.redisUrl, seconds))
      }
      const handovers = await handover(memoryServer, ctx.pick(300, 50))
      const plain = await roundTrip(memoryServer.base, ctx.pick(300, 50))
      const perLock = await memoryPerLock(ctx.pick(100_000, 20_000))

      const memRatio = median(memPairs) / median(bare)
      const redisRatio = median(redisPairs) / median(libPairs)
      // The most any HTTP server could reach here: the bare node:http server's
      // requests/s as pairs (two requests each), against the library's pairs/s.
      // On a small machine, where the load generator shares the cores, this can
      // be below the 0.5× target: then the target is out of reach on it.
      const ceiling = median(bare) / 2 / median(libPairs)
      const p50 = handovers.percentile(50)
      rows.push(
        { figure: 'server pairs/s, memory store', baton: fmtRate(median(memPairs)), other: `bare node:http ${fmtRate(median(bare))} requests`, ratio: fmtRatio(memRatio), target: '≥ 0.35×', met: memRatio >= 0.35 },
        { figure: 'server pairs/s, Redis store', baton: fmtRate(median(redisPairs)), other: `library on Redis ${fmtRate(median(libPairs))} pairs`, ratio: fmtRatio(redisRatio), target: '≥ 0.5×', met: redisRatio >= 0.5 },
        {
          figure: 'bound on the Redis ratio here: bare node:http pairs/s ÷ library pairs/s', baton: fmtRate(median(bare) / 2),
          other: `library on Redis ${fmtRate(median(libPairs))} pairs`, ratio: fmtRatio(ceiling), target: 'context', met: undefined,
        },
        {
          figure: 'server Redis pairs/s as a share of that bound', baton: fmtRate(median(redisPairs)), other: `bare node:http ${fmtRate(median(bare) / 2)} pairs`,
          ratio: fmtRatio(median(redisPairs) / (median(bare) / 2)), target: 'context', met: undefined,
        },
        { figure: 'server long-poll hand-over p50', baton: fmtMs(p50), other: `one GET /healthz round trip p50 ${fmtMs(plain.percentile(50))}`, ratio: '', target: '≤ 2 ms', met: p50 <= 2 },
        { figure: 'server heap per held lock (memory store)', baton: fmtBytes(perLock), other: '', ratio: '', target: '≤ 1 KB', met: perLock <= 1024 },
      )
      const markdown = [
        `## ${this.title}`,
        '',
        `Medians of ${runs} runs of ${seconds} s each, alternating; the load generator runs in the benchmark process, the servers in their own.`,
        '',
        table(['figure', 'value', 'compared with', 'ratio', 'target', 'met'], rows.map((r) => [r.figure, r.baton, r.other, r.ratio, r.target, fmtMet(r.met)])),
        '',
        `Runs: bare ${bare.map(fmtRate).join(', ')}; memory pairs ${memPairs.map(fmtRate).join(', ')}; Redis pairs ${redisPairs.map(fmtRate).join(', ')}; library pairs ${libPairs.map(fmtRate).join(', ')}. `
          + `Hand-over p90 ${fmtMs(handovers.percentile(90))}.`,
      ].join('\n')
      return { markdown, summary: rows }
    } finally {
      baseline.child.kill()
      await Promise.all([memoryServer.stop(), redisServer.stop()])
    }
  },
}
