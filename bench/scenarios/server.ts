/**
 * 11. The lock server (`baton serve`, a child process) under HTTP load from
 * autocannon with keep-alive:
 * - acquire+release pairs/s over 64 connections on the embedded store and on
 *   Redis, each as a share of the bound: a bare node:http server answering the
 *   same chained requests (same load generator, same keep-alive, bodies of the
 *   same shape and size) in the same run; a pair is two requests;
 * - the Redis figure against the library on Redis directly (64 flows in this
 *   process), and each server's CPU per pair;
 * - long-poll hand-over: a release through the server until the waiting
 *   request has its answer (p50);
 * - server heap per held lock with 100k held (memory store), after full GCs.
 */
import autocannon, { type Request } from 'autocannon'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { connect } from '../../src/index.js'
import { startBatonServer, type BatonServer } from '../../test/harness/baton-server.js'
import { fmtBytes, fmtMet, fmtMs, fmtNum, fmtRate, fmtRatio, median, Samples, table } from '../report.js'
import type { BenchContext, Scenario, ScenarioResult, SummaryRow } from '../types.js'
import { runTag } from '../util.js'

const CONNECTIONS = 64
const JSON_HEADERS = { 'content-type': 'application/json' }

/** CPU time (user + system) a process has used so far, in µs; NaN where /proc is not there. */
function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * (1e6 / CLOCK_TICKS)
  } catch {
    return NaN
  }
}
const CLOCK_TICKS = 100

/**
 * Pairs/s (two requests each) of autocannon on `requests` for `seconds`, the
 * server's CPU µs per pair, and redis-server's (`redisPid`), which shares the cores.
 */
async function load(url: string, pid: number, seconds: number, requests: Request[], redisPid: number): Promise<{ pairs: number; cpu: number; redisCpu: number; loadCpu: number }> {
  const cpu0 = cpuMicros(pid)
  const redis0 = cpuMicros(redisPid)
  const load0 = process.cpuUsage()
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, requests })
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${result.errors} errors, ${result.non2xx} non-2xx answers under load`)
  const pairs = result.requests.total / 2
  const used = process.cpuUsage(load0)
  return { pairs: pairs / seconds, cpu: (cpuMicros(pid) - cpu0) / pairs, redisCpu: (cpuMicros(redisPid) - redis0) / pairs, loadCpu: (used.user + used.system) / pairs }
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

/** The bare node:http server; with `redisUrl`, the one that also makes the raw Redis calls (see http-baseline.ts). */
async function startBaseline(redisUrl?: string): Promise<{ url: string; child: ChildProcess }> {
  const script = fileURLToPath(new URL('../http-baseline.js', import.meta.url))
  const child = spawn(process.execPath, [script, ...(redisUrl ? [redisUrl] : [])], { stdio: ['ignore', 'pipe', 'inherit'] })
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
    const rawBaseline = await startBaseline(ctx.redisUrl)
    const rows: SummaryRow[] = []
    try {
      const bare: number[] = []
      const memPairs: number[] = []
      const redisPairs: number[] = []
      const libPairs: number[] = []
      const rawPairs: number[] = []
      const cpu = { bare: [] as number[], memory: [] as number[], redis: [] as number[], raw: [] as number[] }
      const redisCpu = { redis: [] as number[], raw: [] as number[] }
      const loadCpu = { bare: [] as number[], redis: [] as number[] }
      for (let run = 0; run < runs; run++) {
        ctx.log(`  run ${run + 1}/${runs}`)
        // The same chained requests (acquire, then DELETE the lease id it answered), so the load generator does the same work.
        const b = await load(baseline.url, baseline.child.pid ?? -1, seconds, pairRequests('bare'), ctx.redis.pid)
        const m = await load(memoryServer.base, memoryServer.pid, seconds, pairRequests(`pairs-${runTag}-${run}`), ctx.redis.pid)
        const r = await load(redisServer.base, redisServer.pid, seconds, pairRequests(`pairs-${runTag}-${run}`), ctx.redis.pid)
        const w = await load(rawBaseline.url, rawBaseline.child.pid ?? -1, seconds, pairRequests(`raw-${runTag}-${run}`), ctx.redis.pid)
        bare.push(b.pairs)
        rawPairs.push(w.pairs)
        cpu.raw.push(w.cpu)
        redisCpu.raw.push(w.redisCpu)
        loadCpu.bare.push(b.loadCpu)
        memPairs.push(m.pairs)
        redisPairs.push(r.pairs)
        cpu.bare.push(b.cpu)
        cpu.memory.push(m.cpu)
        cpu.redis.push(r.cpu)
        redisCpu.redis.push(r.redisCpu)
        loadCpu.redis.push(r.loadCpu)
        libPairs.push(await libraryPairs(ctx.redisUrl, seconds))
      }
      const handovers = await handover(memoryServer, ctx.pick(300, 50))
      const plain = await roundTrip(memoryServer.base, ctx.pick(300, 50))
      const perLock = await memoryPerLock(ctx.pick(100_000, 20_000))

      // The bound: the bare node:http server's requests/s as pairs (two requests each),
      // driven by the same load generator with the same chained requests in the same run.
      // Ratios are medians of per-run ratios (the machine's load moves all three together).
      const bound = median(bare)
      const memShare = median(memPairs.map((p, i) => p / bare[i]!))
      const redisShare = median(redisPairs.map((p, i) => p / bare[i]!))
      const libRatio = median(redisPairs.map((p, i) => p / libPairs[i]!))
      const rawShare = median(rawPairs.map((p, i) => p / bare[i]!))
      const cpuOf = (samples: number[]) => `${fmtNum(median(samples), 0)} µs`
      const p50 = handovers.percentile(50)
      rows.push(
        { figure: 'server pairs/s, memory store, share of the bare node:http bound', baton: fmtRate(median(memPairs)), other: `bare node:http ${fmtRate(bound)} pairs`, ratio: fmtRatio(memShare), target: '≥ 0.8×', met: memShare >= 0.8 },
        { figure: 'server pairs/s, Redis store, share of the bare node:http bound', baton: fmtRate(median(redisPairs)), other: `bare node:http ${fmtRate(bound)} pairs`, ratio: fmtRatio(redisShare), target: '≥ 0.8×', met: redisShare >= 0.8 },
        {
          figure: 'server pairs/s, Redis store, against the library on Redis directly', baton: fmtRate(median(redisPairs)),
          other: `library on Redis ${fmtRate(median(libPairs))} pairs`, ratio: fmtRatio(libRatio), target: 'context', met: undefined,
        },
        {
          // What any HTTP lock on this Redis could reach here: node:http plus one raw SET NX PX / Lua delete per request.
          figure: 'node:http + raw Redis (SET NX PX, Lua delete), share of the bound', baton: fmtRate(median(rawPairs)),
          other: `bare node:http ${fmtRate(bound)} pairs`, ratio: fmtRatio(rawShare), target: 'context', met: undefined,
        },
        {
          figure: 'server pairs/s, Redis store, against node:http + raw Redis', baton: fmtRate(median(redisPairs)),
          other: `node:http + raw Redis ${fmtRate(median(rawPairs))} pairs`, ratio: fmtRatio(median(redisPairs.map((p, i) => p / rawPairs[i]!))), target: 'context', met: undefined,
        },
        {
          figure: 'server process CPU per pair, memory / Redis store', baton: `${cpuOf(cpu.memory)} / ${cpuOf(cpu.redis)}`,
          other: `bare node:http ${cpuOf(cpu.bare)}; node:http + raw Redis ${cpuOf(cpu.raw)}`, ratio: `${fmtRatio(median(cpu.memory) / median(cpu.bare))} / ${fmtRatio(median(cpu.redis) / median(cpu.bare))}`, target: 'context', met: undefined,
        },
        {
          figure: 'redis-server CPU per pair, lock server / node:http + raw Redis', baton: cpuOf(redisCpu.redis), other: `raw ${cpuOf(redisCpu.raw)}`,
          ratio: fmtRatio(median(redisCpu.redis) / median(redisCpu.raw)), target: 'context', met: undefined,
        },
        {
          // The three processes share the machine's cores: their CPU per pair bounds pairs/s when the cores are full.
          figure: 'load generator CPU per pair, lock server on Redis / bare node:http', baton: cpuOf(loadCpu.redis), other: `bare ${cpuOf(loadCpu.bare)}`,
          ratio: fmtRatio(median(loadCpu.redis) / median(loadCpu.bare)), target: 'context', met: undefined,
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
        `Runs (pairs/s): bare node:http ${bare.map(fmtRate).join(', ')}; memory pairs ${memPairs.map(fmtRate).join(', ')}; Redis pairs ${redisPairs.map(fmtRate).join(', ')}; library pairs ${libPairs.map(fmtRate).join(', ')}; node:http + raw Redis ${rawPairs.map(fmtRate).join(', ')}. `
          + `Hand-over p90 ${fmtMs(handovers.percentile(90))}.`,
      ].join('\n')
      return { markdown, summary: rows }
    } finally {
      baseline.child.kill()
      rawBaseline.child.kill()
      await Promise.all([memoryServer.stop(), redisServer.stop()])
    }
  },
}
