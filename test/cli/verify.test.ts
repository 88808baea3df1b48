/**
 * `baton verify` through the shipped bin: it passes on every store of the
 * suite with pauses and kills injected, and it catches a real violation —
 * a Redis whose data is wiped while workers hold the lock (what an
 * asynchronous failover does) — reporting the two holders and their tokens,
 * with the stale holder's writes refused by the fenced counter.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { ms } from '../harness/timing.js'
import { startBaton } from './baton-cli.js'
import { startRedis, redisCommand, stopAll } from '../harness/servers.js'
import { startRedlock } from '../harness/redlock.js'
import { startPostgres } from '../harness/postgres.js'
import { startEtcd } from '../harness/etcd.js'
import { startZookeeper } from '../harness/zookeeper.js'
import { startBatonServer } from '../harness/baton-server.js'
import { findViolations, Resource } from '../../src/cli/verify/history.js'
import type { VerifyReport } from '../../src/cli/commands/verify.js'

after(() => stopAll())

const FAULTY = ['--workers', '3', '--seconds', '10', '--ttl', '1s', '--hold', '100ms', '--pause', '2500ms', '--kill', '3500ms', '--json']

async function verify(url: string, args: string[] = FAULTY): Promise<{ code: number | null; report: VerifyReport; stderr: string }> {
  const { code, stdout, stderr } = await startBaton(['verify', '--store', url, ...args]).finished
  let report: VerifyReport
  try {
    report = JSON.parse(stdout) as VerifyReport
  } catch {
    throw new Error(`verify printed no JSON report (exit ${code}): ${stdout}\n${stderr}`)
  }
  return { code, report, stderr }
}

function assertPassed(code: number | null, report: VerifyReport): void {
  assert.deepEqual(report.violations, [], `no violation (faults: ${JSON.stringify(report.faults)})`)
  assert.equal(code, 0)
  assert.equal(report.passed, true)
  assert.ok(report.holds >= 3 && report.writesAccepted > 0, `work was done: ${report.holds} holds`)
  assert.ok(report.faults.some((f) => f.kind === 'pause') && report.faults.some((f) => f.kind === 'kill'), 'faults were injected')
}

describe('baton verify', () => {
  const stores: Array<[string, () => Promise<string>]> = [
    ['redis://', async () => (await startRedis()).url],
    ['redlock:// (3 nodes)', async () => (await startRedlock(3)).url],
    ['postgres://', async () => { const pg = await startPostgres(); after(() => pg.stop()); return pg.url }],
    ['etcd://', async () => { const etcd = await startEtcd(); after(() => etcd.stop()); return etcd.url }],
    ['zk://', async () => { const zk = await startZookeeper(); after(() => zk.stop()); return `zk://${zk.hosts}/verify` }],
    ['http:// (server on memory)', async () => (await startBatonServer()).base],
  ]
  for (const [label, start] of stores) {
    it(`passes on ${label} with holders paused past their ttl and killed`, async () => {
      const { code, report } = await verify(await start())
      assertPassed(code, report)
    })
  }

  it('catches two holders on a Redis wiped mid-run, with their tokens, and the fenced counter refuses the stale holder', async () => {
    const redis = await startRedis()
    const run = verify(redis.url, ['--workers', '3', '--seconds', '8', '--ttl', '3s', '--hold', '1s', '--pause', '0', '--kill', '0', '--json'])
    await new Promise((resolve) => setTimeout(resolve, 2500))
    // What an asynchronous failover does: the new master never saw the hold.
    for (let i = 0; i < 15; i++) {
      await redisCommand(redis.port, ['FLUSHALL'])
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const { code, report } = await run
    assert.equal(code, 1, 'a violation fails the run')
    assert.equal(report.passed, false)
    const overlap = report.violations.find((v) => v.kind === 'overlap')
    assert.ok(overlap, `an overlap is reported: ${JSON.stringify(report.violations)}`)
    assert.equal(overlap.tokens.length, 2)
    for (const token of overlap.tokens) assert.match(overlap.evidence, new RegExp(`token ${token}`))
    assert.ok(report.staleWritesRefused > 0, 'the fenced counter refused the overtaken holder')
    assert.ok(!report.violations.some((v) => v.kind === 'lost-update' || v.kind === 'stale-write-accepted'), 'fencing kept the counter right')
  })

  it('says at once, in one line, when the store URL is unusable (exit 2) or the store does not answer (exit 69)', async () => {
    const run = ['--seconds', '3', '--pause', '0', '--kill', '0']
    const bogus = await startBaton(['verify', '--store', 'bogus://x', ...run]).finished
    assert.equal(bogus.code, 2, bogus.stdout + bogus.stderr)
    assert.match(bogus.stderr, /^baton verify: unknown store URL scheme "bogus:\/\/"/)
    assert.equal(bogus.stdout, '', 'no report: nothing ran')
    const down = await startBaton(['verify', '--store', 'redis://127.0.0.1:1', ...run]).finished
    assert.equal(down.code, 69, down.stdout + down.stderr)
    assert.match(down.stderr, /^baton: BACKEND_UNAVAILABLE: .*127\.0\.0\.1:1/)
    assert.equal(down.stderr.trim().split('\n').length, 1, `one line, no stack: ${down.stderr}`)
  })

  for (const signal of ['SIGINT', 'SIGKILL'] as const) {
    it(`leaves no worker behind, paused ones included, when it is ended by ${signal}`, async () => {
      const redis = await startRedis()
      const running = startBaton(['verify', '--store', redis.url, '--seconds', '60', '--ttl', '1s', '--hold', '100ms', '--pause', '300ms', '--kill', '0'])
      const pid = running.process.pid!
      const children = (): number[] => {
        const file = `/proc/${pid}/task/${pid}/children`
        return existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : []
      }
      const state = (child: number): string | undefined => {
        try { return readFileSync(`/proc/${child}/stat`, 'utf8').replace(/^.*\) /s, '')[0] } catch { return undefined }
      }
      // Wait until a worker is stopped (paused past its ttl), then end verify.
      let workers: number[] = []
      for (let i = 0; i < ms(600) && !workers.some((w) => state(w) === 'T'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        workers = children().filter((c) => readFileSync(`/proc/${c}/cmdline`, 'utf8').includes('--worker'))
      }
      assert.ok(workers.some((w) => state(w) === 'T'), 'a worker was paused')
      process.kill(pid, signal)
      await running.finished
      const alive = () => workers.filter((w) => { const s = state(w); return s !== undefined && s !== 'Z' })
      for (let i = 0; i < ms(200) && alive().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      const left = alive()
      for (const w of left) { try { process.kill(w, 'SIGCONT'); process.kill(w, 'SIGKILL') } catch { /* gone */ } }
      assert.deepEqual(left.map((w) => `${w} (${state(w)})`), [], 'every worker exited')
    })
  }

  it('refuses bad input with exit 2', async () => {
    for (const args of [['--workers', '1'], ['--ttl', '1s', '--hold', '2s'], ['--seconds', 'soon'], ['--pause', '-1']]) {
      const { code, stderr } = await startBaton(['verify', '--store', 'redis://127.0.0.1:1', ...args]).finished
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`)
      assert.match(stderr, /baton verify: /)
    }
    const { code } = await startBaton(['verify'], { BATON_URL: undefined }).finished
    assert.equal(code, 2)
  })
})

describe('verify: the checks', () => {
  const hold = (worker: number, token: bigint, grantedAt: number, validUntil: number, endedAt?: number) =>
    ({ worker, token, grantedAt, validUntil, ...(endedAt === undefined ? {} : { endedAt }) })

  it('a paused holder whose lease ran out is no overlap; one still within its lease is', () => {
    const r = new Resource(true)
    r.holds.push(hold(1, 10n, 0, 1000), hold(2, 11n, 1001, 2000, 1500), hold(3, 12n, 1400, 3000, 1600))
    const v = findViolations(r, { progressWindowMs: 1000, endedAt: 5000 })
    assert.deepEqual(v.map((x) => x.kind), ['overlap'])
  })

  it('tokens that go back between holders, stale writes and lost updates without fencing, and a stall after a fault', () => {
    const r = new Resource(false)
    r.holds.push(hold(1, 10n, 0, 1000, 100), hold(2, 9n, 200, 1200, 300))
    assert.equal(r.read(10n).accepted, true)
    r.write(1, 10n, 1, 0, 50)
    r.write(2, 9n, 1, 0, 250)
    r.faults.push({ kind: 'kill', worker: 2, at: 300, healedAt: 300 })
    const kinds = findViolations(r, { progressWindowMs: 1000, endedAt: 5000 }).map((x) => x.kind).sort()
    assert.deepEqual(kinds, ['lost-update', 'no-progress', 'stale-write-accepted', 'token-order'])
  })

  it('with fencing on, stale reads and writes are refused and nothing is lost', () => {
    const r = new Resource(true)
    const newer = r.read(20n)
    assert.equal(r.read(10n).accepted, false)
    assert.equal(r.write(1, 10n, 5, 0).accepted, false)
    assert.equal(r.write(2, 20n, newer.value + 1, newer.version).accepted, true)
    assert.deepEqual(findViolations(r, { progressWindowMs: 1000, endedAt: Date.now() }), [])
  })
})
