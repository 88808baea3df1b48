/**
 * `npm run bench`: starts its own redis-server (never the system one), runs
 * every scenario in bench/scenarios/index.ts, prints a markdown report with
 * a summary table, writes it to bench/last-run.md, and stops every server
 * and worker it started.
 *
 * BENCH_QUICK=1  short smoke run (~40 s)
 * BENCH_ONLY=id,id  run only these scenarios (ids in bench/scenarios/*.ts)
 * BENCH_PG_FSYNC=off  PostgreSQL scenarios without WAL flushes (CPU cost only)
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { startPostgres, type PostgresServer } from '../test/harness/postgres.js'
import { startMariadb, type MariadbServer } from '../test/harness/mariadb.js'
import { startRedis, stopAll } from '../test/harness/servers.js'
import { closeRedis, openRedis } from './peers/redis-client.js'
import { redisVersion } from './redis-info.js'
import { fmtMet, reasonOf, table } from './report.js'
import { scenarios } from './scenarios/index.js'
import type { BenchContext, ScenarioResult, SummaryRow } from './types.js'
import { withTimeout } from './util.js'
import { stopWorkers } from './workers.js'

const REPORT_FILE = new URL('../../bench/last-run.md', import.meta.url)
const quick = process.env.BENCH_QUICK === '1'
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean)
const started = Date.now()
let postgres: Promise<PostgresServer> | undefined
let mariadb: Promise<MariadbServer> | undefined

function log(message: string): void {
  process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${message}\n`)
}

// A peer library's stray promise rejection must not end the run.
process.on('unhandledRejection', (error) => log(`unhandled rejection (ignored): ${reasonOf(error)}`))

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '?'
  }
}

async function main(): Promise<number> {
  const selected = scenarios.filter((s) => !only || only.includes(s.id))
  if (selected.length === 0) {
    log(`BENCH_ONLY=${process.env.BENCH_ONLY} matches no scenario; known: ${scenarios.map((s) => s.id).join(', ')}`)
    return 2
  }
  log(`starting redis-server${quick ? ' (BENCH_QUICK=1)' : ''}`)
  const redis = await startRedis()
  const admin = await openRedis(redis.url)
  const version = await redisVersion(admin)
  await closeRedis(admin)
  log(`redis ${version} at ${redis.url} (pid ${redis.pid})`)

  const ctx: BenchContext = {
    redis,
    redisUrl: redis.url,
    async postgresUrl() {
      postgres ??= startPostgres({
        fsync: process.env.BENCH_PG_FSYNC !== 'off',
        settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
      }).then((server) => {
        log(`postgres (own cluster, fsync ${process.env.BENCH_PG_FSYNC === 'off' ? 'off' : 'on'}) at 127.0.0.1:${server.port} (pid ${server.pid})`)
        return server
      })
      return (await postgres).url
    },
    async mysqlUrl() {
      mariadb ??= startMariadb({ durable: true }).then((server) => {
        log(`mariadb (own server, commits flushed to disk) at 127.0.0.1:${server.port} (pid ${server.pid})`)
        return server
      })
      return (await mariadb).url
    },
    quick,
    log,
    pick: (full, short) => (quick ? short : full),
  }
  const sections: string[] = []
  const summary: SummaryRow[] = []
  for (const scenario of selected) {
    log(`${scenario.title}`)
    const t0 = Date.now()
    let result: ScenarioResult
    try {
      // Safety net: a peer stuck in a way no scenario timeout catches must not hang the benchmark.
      result = await withTimeout(scenario.run(ctx), ctx.pick(scenario.timeoutMs?.full ?? 300_000, scenario.timeoutMs?.quick ?? 120_000), scenario.id)
    } catch (error) {
      const reason = `failed: ${reasonOf(error)}`
      log(`  ${reason}`)
      result = {
        markdown: `## ${scenario.title}\n\n${reason}`,
        summary: [{ figure: scenario.title, baton: reason, other: '', ratio: '', target: '', met: undefined }],
      }
    }
    log(`  done in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    sections.push(result.markdown)
    summary.push(...result.summary)
  }

  const seconds = (Date.now() - started) / 1000
  const cpu = cpus()
  const header = [
    `# baton benchmark${quick ? ' (BENCH_QUICK smoke run: few, short runs; numbers are rough)' : ''}`,
    '',
    `${new Date().toISOString()} · Node ${process.version} · redis-server ${version} (own instance, loopback, persistence off) · `
    + `${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'} · load avg ${loadavg().map((l) => l.toFixed(2)).join(' ')} · ${seconds.toFixed(0)} s in total`,
    '',
    `Peers: redlock ${packageVersion('redlock')}, @sesamecare-oss/redlock ${packageVersion('@sesamecare-oss/redlock')}, `
    + `redis-semaphore ${packageVersion('redis-semaphore')}, async-mutex ${packageVersion('async-mutex')}, ioredis ${packageVersion('ioredis')}. `
    + 'Baseline "raw": ioredis SET key value NX PX ttl + Lua compare-and-delete by plain EVALSHA (bench/raw-redis.ts). '
    + 'baton: `connect(url)`, `baton.mutex(key, { ttl: \'10s\' })` made once per key, `.acquire({ wait: \'30s\' })`, `lease.release()`.',
  ].join('\n')
  const summaryTable = [
    '## Summary',
    '',
    table(
      ['figure', 'baton', 'baseline / peer', 'ratio', 'target', 'met'],
      summary.map((r) => [r.figure, r.baton, r.other, r.ratio, r.target, fmtMet(r.met)]),
    ),
  ].join('\n')
  const markdown = [header, ...sections, summaryTable].join('\n\n') + '\n'
  process.stdout.write(`\n${markdown}`)
  writeFileSync(REPORT_FILE, markdown)
  log(`report written to bench/last-run.md`)
  return 0
}

let code = 1
try {
  code = await main()
} catch (error) {
  log(`benchmark failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
} finally {
  await stopWorkers()
  await stopAll()
  await postgres?.then((server) => server.stop(), () => {})
  await mariadb?.then((server) => server.stop(), () => {})
}
// Abandoned flows of a stuck peer could keep the event loop alive.
process.exit(code)
