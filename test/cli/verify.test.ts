/**
 * `baton verify` through the shipped bin (its runs on every store are in
 * verify-stores.test.ts): it catches a real violation —
 * a Redis whose data is wiped while workers hold the lock (what an
 * asynchronous failover does) — reporting the two holders and their tokens,
 * with the stale holder's writes refused by the fenced counter.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ms } from '../harness/timing.js'
import { startBaton } from './baton-cli.js'
import { historyOfViolations, seconds, verify } from './verify-run.js'
import { startRedis, redisCommand, stopAll } from '../harness/servers.js'
import { effectOf, outagesOf, stallsOf, unavailableCalls, type Unavailable } from '../../src/cli/verify/history.js'
import { historyNow } from '../../src/cli/verify/clock.js'
import { exitStatusOf, type VerifyReport } from '../../src/cli/verify/report.js'
import { check } from '../../src/chaos/checker.js'
import type { Fault, History, HistoryEvent } from '../../src/chaos/history.js'
import { FencedCounter } from '../../src/chaos/resource.js'

after(() => stopAll())

describe('baton verify', () => {
  it('runs every workload on Redis: the chaos plans through the chaos client, judged by the chaos checker', async () => {
    const redis = await startRedis()
    for (const workload of ['mutex', 'fair', 'rwlock', 'semaphore', 'election', 'multi', 'mixed']) {
      const historyFile = workload === 'mutex' ? join(mkdtempSync(join(tmpdir(), 'baton-verify-history-')), 'history.json') : undefined
      const { code, report } = await verify(redis.url, ['--workload', workload, '--seed', '7', '--workers', '2', '--seconds', seconds(5), '--ttl', '1s', '--pause', '2s', '--kill', '3s', '--json',
        ...(historyFile === undefined ? [] : ['--history', historyFile])])
      assert.deepEqual(report.violations, [], `${workload}: no violation${historyOfViolations(report)}`)
      assert.equal(report.historyFile, historyFile, 'a history is written when asked for (or after a violation)')
      if (historyFile !== undefined) {
        const history = JSON.parse(readFileSync(historyFile, 'utf8')) as History
        assert.equal(history.seed, 7)
        assert.equal(new Set(history.events.flatMap((e) => e.type === 'grant' ? [e.lease] : [])).size, report.holds, 'every hold is in the history')
      }
      assert.equal(report.workload, workload)
      assert.equal(report.seed, 7)
      assert.deepEqual(report.primitives, workload === 'mixed' ? ['mutex', 'fair', 'rwlock', 'semaphore', 'election', 'multi'] : [workload])
      assert.ok(report.holds > 0, `${workload}: work was done: ${JSON.stringify(report.ops)}`)
      assert.ok(Object.keys(report.ops).some((op) => op.startsWith(workload === 'mixed' ? '' : `${workload} `)), `${workload}: its operations ran: ${JSON.stringify(report.ops)}`)
      // A stall after a fault (load causes it as readily as a store) may turn 0 into 69, never into 1.
      if (code === 69) assert.ok(report.stalls.length + report.unavailable.length > 0, `${workload}: exit 69 says why`)
      else assert.equal(code, 0, `${workload}: ${JSON.stringify(report)}`)
    }
  })

  it('--fault-cmd stopping the Redis server and resuming it is a fault with its effect in the report, never a violation', async () => {
    const redis = await startRedis()
    const { code, report } = await verify(redis.url, ['--workload', 'mutex', '--workers', '2', '--seconds', seconds(8), '--ttl', '1s', '--pause', '0', '--kill', '0',
      '--fault-cmd', `kill -STOP ${redis.pid}; sleep 2; kill -CONT ${redis.pid}`, '--fault-every', '3s', '--json'])
    assert.deepEqual(report.violations, [], 'a stalled store that keeps its holds lets nobody in twice')
    const faults = report.faults.filter((f) => f.kind === 'fault-cmd')
    assert.ok(faults.length >= 1, `the fault ran: ${JSON.stringify(report.faults)}`)
    for (const f of faults) {
      assert.match(f.target, /kill -STOP/)
      assert.equal(f.detail, 'exit 0')
      assert.ok(f.healedAt !== undefined && f.healedAt >= f.at, 'it is said when the fault command ended')
      assert.equal(f.effect.violations, 0)
      assert.ok(f.effect.holdsLost >= 0 && f.effect.failedCalls >= 0)
    }
    assert.ok(faults.some((f) => f.effect.recoveredAfterMs !== undefined), `work went on after the fault: ${JSON.stringify(faults)}`)
    assert.equal(report.passed, true)
    assert.ok(code === 0 || code === 69, `0, or 69 for calls the stopped store did not answer: ${code}`)
  })

  it('--fault-cmd wiping the store (FLUSHALL) under waiting contenders: two holders, exit 1, with the fault that caused them', async () => {
    const redis = await startRedis()
    const { code, report } = await verify(redis.url, ['--workload', 'mutex', '--workers', '3', '--seconds', seconds(8), '--ttl', '2s', '--pause', '0', '--kill', '0',
      '--fault-cmd', `redis-cli -p ${redis.port} FLUSHALL`, '--fault-every', '1s', '--json'])
    assert.equal(code, 1, 'a violation fails the run')
    assert.equal(report.passed, false)
    const overlap = report.violations.find((v) => v.kind === 'two-holders')
    assert.ok(overlap, `two holders are reported: ${JSON.stringify(report.violations)}`)
    for (const token of overlap.tokens) assert.match(overlap.evidence, new RegExp(`token ${token}`))
    assert.match(overlap.knownLimit ?? '', /restarts empty/, 'the documented limit of a Redis without persistence is said beside it, not as an excuse')
    assert.ok(report.faults.some((f) => f.kind === 'fault-cmd' && f.effect.violations > 0), `the fault that let them in says so: ${JSON.stringify(report.faults)}`)
    // The evidence in full is kept without being asked for, and checks the same again.
    assert.ok(report.historyFile !== undefined && existsSync(report.historyFile), `the history is kept: ${report.historyFile}`)
    const history = JSON.parse(readFileSync(report.historyFile, 'utf8')) as History
    assert.equal(history.seed, report.seed)
    assert.ok(history.events.some((e) => e.type === 'fault'), 'its faults are in it')
    assert.ok(check(history).violations.some((v) => v.property === 'two-holders'), 'the checker finds the same overlap in it')
  })

  it('catches two holders on a Redis wiped mid-run, with their tokens, and the fenced counter refuses the stale holder', async () => {
    const redis = await startRedis()
    const run = verify(redis.url, ['--workers', '3', '--seconds', seconds(8), '--ttl', '3s', '--hold', '1s', '--pause', '0', '--kill', '0', '--json'])
    // Wipe while a worker holds: wait for the lock's key rather than a fixed
    // time (workers take longer to start on a busy machine), then a few
    // holds more so that a grant lands between two wipes.
    const deadline = Date.now() + ms(60_000)
    while ((await redisCommand(redis.port, ['DBSIZE'])) === 0) {
      assert.ok(Date.now() < deadline, 'a worker took the lock')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await new Promise((resolve) => setTimeout(resolve, 1500))
    // What an asynchronous failover does: the new master never saw the hold.
    for (let i = 0; i < 15; i++) {
      await redisCommand(redis.port, ['FLUSHALL'])
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const { code, report } = await run
    assert.equal(code, 1, 'a violation fails the run')
    assert.equal(report.passed, false)
    const overlap = report.violations.find((v) => v.kind === 'two-holders')
    assert.ok(overlap, `an overlap is reported: ${JSON.stringify(report.violations)}`)
    assert.equal(overlap.tokens.length, 2)
    for (const token of overlap.tokens) assert.match(overlap.evidence, new RegExp(`token ${token}`))
    assert.ok(report.staleWritesRefused > 0, 'the fenced counter refused the overtaken holder')
    assert.ok(!report.violations.some((v) => v.kind === 'lost-update' || v.kind === 'stale-write'), 'fencing kept the counter right')
  })

  it('a wall clock stepped back 3 s mid-run (in the verifier and every worker) fakes no overlap: the history runs on the monotonic clock', async () => {
    const redis = await startRedis()
    // Date.now() of every process of the run jumps back 3 s at one moment,
    // as when NTP or an operator steps the machine's clock.
    const dir = mkdtempSync(join(tmpdir(), 'baton-step-'))
    const hook = join(dir, 'step-clock.mjs')
    writeFileSync(hook, [
      'const realNow = Date.now.bind(Date)',
      'const stepAt = Number(process.env.BATON_TEST_STEP_AT)',
      'Date.now = () => { const t = realNow(); return t >= stepAt ? t - 3000 : t }',
      '',
    ].join('\n'))
    const stepAt = Date.now() + ms(3000)
    const { code, report } = await verify(redis.url, ['--workers', '3', '--seconds', seconds(7), '--ttl', '1s', '--hold', '100ms', '--pause', '0', '--kill', '0', '--json'], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${pathToFileURL(hook).href}`.trim(),
      BATON_TEST_STEP_AT: String(stepAt),
    })
    assert.ok(Date.now() > stepAt, 'the clock stepped during the run')
    assert.deepEqual(report.violations, [], 'no violation')
    assert.equal(code, 0)
    assert.ok(report.holds >= 3, `work was done: ${report.holds} holds`)
  })

  it('a safe Redis (appendfsync always) restarted mid-run is unavailability, not a violation: workers retry, dead ones are replaced, exit 69', async () => {
    const redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] })
    // A kill every 2 s and the store down for longer than two of them: a
    // worker started in its place meanwhile must connect once it is back.
    const running = startBaton(['verify', '--store', redis.url, '--workers', '3', '--seconds', seconds(14), '--ttl', '1s', '--hold', '100ms', '--pause', '0', '--kill', '2s', '--json'])
    const pid = running.process.pid!
    const workers = (): number[] => {
      const file = `/proc/${pid}/task/${pid}/children`
      return existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : []
    }
    for (let i = 0; i < ms(300) && workers().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    await new Promise((resolve) => setTimeout(resolve, ms(1000)))
    await redis.restart({ downMs: ms(5000) })
    const run = running.finished.then(({ code, stdout }) => ({ code, report: JSON.parse(stdout) as VerifyReport }))
    const { code, report } = await run
    assert.deepEqual(report.violations, [], 'a restart of a store that keeps its holds is no violation')
    assert.deepEqual(report.workerFailures, [], 'no worker died of the outage')
    assert.ok(report.unavailable.length >= 1, `the outage is reported: ${JSON.stringify(report.unavailable)}`)
    assert.ok(report.unavailable.some((o) => o.during.includes('connect')), `workers started meanwhile retried their connect: ${JSON.stringify(report.unavailable)}`)
    assert.ok(report.unavailable.every((o) => o.recoveredAt !== undefined), 'work went on after the outage')
    assert.equal(code, 69, 'unavailability has its own exit status')
    assert.equal(report.passed, true)
  })

  it('a worker that dies of its own accord is replaced, and said apart from the violations', async () => {
    const redis = await startRedis()
    const running = startBaton(['verify', '--store', redis.url, '--workers', '2', '--seconds', seconds(8), '--ttl', '1s', '--hold', '100ms', '--pause', '0', '--kill', '0', '--json'])
    const pid = running.process.pid!
    const workers = (): number[] => {
      const file = `/proc/${pid}/task/${pid}/children`
      return existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : []
    }
    let first: number[] = []
    for (let i = 0; i < ms(300) && first.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      first = workers()
    }
    assert.equal(first.length, 2, 'two workers started')
    await new Promise((resolve) => setTimeout(resolve, ms(1500)))
    process.kill(first[0]!, 'SIGTERM')
    // Replaced at once; on a busy machine "at once" is when the verifier next runs.
    let replaced: number[] = []
    for (const until = Date.now() + ms(4000); Date.now() < until && replaced.length < 2;) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      replaced = workers().filter((w) => w !== first[0])
    }
    assert.equal(replaced.length, 2, 'the dead worker was replaced')
    const { code, stdout } = await running.finished
    const report = JSON.parse(stdout) as VerifyReport
    assert.deepEqual(report.violations, [])
    assert.equal(report.workerFailures.length, 1, JSON.stringify(report.workerFailures))
    assert.match(report.workerFailures[0]!, /SIGTERM/)
    assert.equal(code, 1, 'a worker that died is a failure of the run, but no violation is claimed')
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
    for (const args of [['--workers', '1'], ['--ttl', '1s', '--hold', '2s'], ['--seconds', 'soon'], ['--pause', '-1'], ['--workload', 'queue'],
      ['--fault-every', '5s'], ['--fault-cmd', ' '], ['--seed', 'x'], ['--history', '/nonexistent-dir/h.json'], ['--history', '']]) {
      const { code, stderr } = await startBaton(['verify', '--store', 'redis://127.0.0.1:1', ...args]).finished
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`)
      assert.match(stderr, /baton verify: /)
    }
    const { code } = await startBaton(['verify'], { BATON_URL: undefined }).finished
    assert.equal(code, 2)
  })
})

describe('verify: the checks (the chaos checker, and what verify adds)', () => {
  /** A hold as a worker records it: asked 1 ms before its grant, `end` when it said it stopped. */
  const hold = (worker: number, token: bigint, grantedAt: number, deadline: number, endedAt?: number): HistoryEvent[] => {
    const actor = { process: worker, client: 0 }
    const lease = `p${worker}l${token}`
    return [
      { type: 'invoke', ...actor, op: `${lease}-op`, kind: 'acquire', primitive: 'mutex', names: ['n'], at: grantedAt - 1 },
      { type: 'complete', ...actor, op: `${lease}-op`, at: grantedAt, outcome: 'ok' },
      { type: 'grant', ...actor, op: `${lease}-op`, lease, primitive: 'mutex', name: 'n', mode: 'exclusive', token: String(token), weight: 1, permits: 1, at: grantedAt, deadline },
      ...(endedAt === undefined ? [] : [{ type: 'end', ...actor, lease, at: endedAt, why: 'release' } as HistoryEvent]),
    ]
  }
  const history = (events: HistoryEvent[], endedAt = 10_000): History =>
    ({ seed: 1, store: 'redis', events: events.sort((a, b) => a.at - b.at), ttlMs: 1000, startedAt: 0, endedAt })
  const by = (worker: number, token: bigint) => ({ process: worker, client: 0, lease: `p${worker}l${token}` })

  it('a stall after a fault is liveness, not a violation: exit 69, never 1; a violation still beats it', () => {
    const stall = { kind: 'no-progress', evidence: 'no progress: nothing was granted within 5000 ms after the pause of worker 3 ended at +4.564 s' }
    assert.equal(exitStatusOf({ passed: true, unavailable: [], stalls: [] }), 0)
    assert.equal(exitStatusOf({ passed: true, unavailable: [], stalls: [stall] }), 69)
    assert.equal(exitStatusOf({ passed: false, unavailable: [], stalls: [stall] }), 1)
  })

  it('a paused holder whose lease ran out is no overlap; one still within its lease is', () => {
    const v = check(history([...hold(1, 10n, 0, 1000), ...hold(2, 11n, 1001, 2000, 1500), ...hold(3, 12n, 1400, 3000, 1600)]))
    assert.deepEqual(v.violations.map((x) => x.property), ['two-holders'])
  })

  it('tokens that go back between holders, stale writes and lost updates without fencing, and a stall after a fault', () => {
    const counter = new FencedCounter('n', false)
    assert.equal(counter.read(10n).accepted, true)
    const events = [...hold(1, 10n, 0, 1000, 100), ...hold(2, 9n, 200, 1200, 300),
      counter.write(by(1, 10n), 10n, 1, 0, 50), counter.write(by(2, 9n), 9n, 1, 0, 250)]
    const kinds = check(history(events)).violations.map((x) => x.property).sort()
    assert.deepEqual(kinds, ['lost-update', 'stale-write', 'token-order'])
    const kill: Fault = { type: 'fault', kind: 'kill', target: 'worker 2', at: 300, healedAt: 300 }
    assert.equal(stallsOf([kill], [0, 200], [], { windowMs: 1000, endedAt: 5000 }).length, 1)
    assert.equal(stallsOf([kill], [0, 200, 900], [], { windowMs: 1000, endedAt: 5000 }).length, 0)
  })

  it('one token reset among 3,000 holds is one violation, with its evidence, and stays small', () => {
    // Tokens rise, fall back once (a store that lost its counter), then rise again from there.
    const events: HistoryEvent[] = []
    for (let i = 0; i < 3000; i++) events.push(...hold(1 + (i % 3), i < 1500 ? 1000n + BigInt(i) : 10n + BigInt(i), i * 10 + 1, i * 10 + 1000, i * 10 + 5))
    const v = check(history(events, 40_000)).violations
    assert.equal(v.length, 1, `one violation, got ${v.length}`)
    assert.equal(v[0]!.property, 'token-order')
    assert.match(v[0]!.evidence, /got token 1510 .* token 2499 .*the (\d+) grant\(s\) after it stayed below token 2499/)
    assert.ok(Number(/the (\d+) grant/.exec(v[0]!.evidence)![1]) > 900, 'the holds after it that stayed below are counted in its evidence')
    assert.ok(JSON.stringify(v).length < 2000)
  })

  it('overlaps are reported once per offending hold, against the hold still running', () => {
    // 500 holds granted one after another, none ending before the run does
    // (a store that forgot every one of them): 500 offending holds, not 124,750 pairs.
    const events: HistoryEvent[] = []
    for (let i = 0; i < 500; i++) events.push(...hold(1 + (i % 3), 1n + BigInt(i), i * 10 + 1, 100_000))
    const v = check(history(events, 200_000)).violations
    assert.equal(v.length, 499, 'every hold but the first overlaps one earlier hold')
    assert.ok(v.every((x) => x.property === 'two-holders'))
  })

  it('calls the store did not answer are outages, and no progress is claimed missing during one', () => {
    const calls: Unavailable[] = []
    for (let at = 500; at <= 4000; at += 500) calls.push({ worker: 2, at, during: 'connect', message: 'BACKEND_UNAVAILABLE: down' })
    calls.push({ worker: 3, at: 20_000, during: 'acquire', message: 'BACKEND_UNAVAILABLE: down again' })
    const grants = [0, 9000]
    const outages = outagesOf(calls, grants)
    assert.deepEqual(outages.map((o) => [o.from, o.to, o.recoveredAt, o.calls]), [[500, 4000, 9000, 8], [20_000, 20_000, undefined, 1]])
    const kill: Fault = { type: 'fault', kind: 'kill', target: 'worker 1', at: 200, healedAt: 200 }
    assert.deepEqual(stallsOf([kill], grants, outages, { windowMs: 1000, endedAt: 30_000 }), [])
    // A call that failed in a worker just after this run paused it is the pause's doing, not an outage.
    const pause: Fault = { type: 'fault', kind: 'pause', target: 'worker 3', at: 18_000, healedAt: 19_500 }
    assert.equal(outagesOf(calls, grants, [pause], 1000).length, 1)
    assert.equal(outagesOf(calls, grants, [pause], 0).length, 2)
  })

  it('a failed call in the history is unavailability; what a fault did is counted in its window', () => {
    const events: HistoryEvent[] = [
      ...hold(1, 10n, 10, 1010), { type: 'loss', process: 1, client: 0, lease: 'p1l10', at: 600 },
      { type: 'invoke', process: 2, client: 0, op: 'x', kind: 'acquire', primitive: 'mutex', names: ['n'], at: 550 },
      { type: 'complete', process: 2, client: 0, op: 'x', at: 700, outcome: 'error', code: 'BACKEND_UNAVAILABLE', message: 'baton: down' },
      ...hold(2, 11n, 1500, 2500, 1600),
    ]
    const calls = unavailableCalls(events)
    assert.deepEqual(calls, [{ worker: 2, at: 700, during: 'acquire', message: 'BACKEND_UNAVAILABLE: down' }])
    const fault: Fault = { type: 'fault', kind: 'fault-cmd', target: 'redis-cli SHUTDOWN', at: 500, healedAt: 800 }
    assert.deepEqual(effectOf(fault, events, [], calls, 2000), { holdsLost: 1, violations: 0, failedCalls: 1, recoveredAfterMs: 1000 })
  })

  it('a violation seen long after a fault but spanning it counts in that fault\'s effect', () => {
    const fault: Fault = { type: 'fault', kind: 'fault-cmd', target: 'redis restart', at: 500, healedAt: 800 }
    const finding = (at: number, since?: number) => ({ property: 'token-order' as const, at, evidence: 'e', involved: [], ...(since === undefined ? {} : { since }) })
    // A token below one granted at 300, seen at 9,000 (the name's next grant after the counter restarted).
    assert.equal(effectOf(fault, [], [finding(9000, 300)], [], 2000).violations, 1)
    // Nothing spanning the window: one that ended before the fault, one that began after it.
    assert.equal(effectOf(fault, [], [finding(400, 100), finding(9000, 5000), finding(9000)], [], 2000).violations, 0)
  })

  it('the history clock is one clock for every process of the machine', () => {
    // CLOCK_MONOTONIC (process.hrtime) read in a child falls between two reads in this process.
    const before = historyNow()
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(Number(process.hrtime.bigint()) / 1e6))'], { encoding: 'utf8' })
    const after = historyNow()
    const inChild = Number(child.stdout)
    assert.ok(before <= inChild && inChild <= after, `${before} <= ${inChild} <= ${after}`)
  })

  it('with fencing on, stale reads and writes are refused and nothing is lost', () => {
    const counter = new FencedCounter('n', true)
    const newer = counter.read(20n)
    assert.equal(counter.read(10n).accepted, false)
    const stale = counter.write(by(1, 10n), 10n, 5, 0)
    assert.equal(stale.accepted, false)
    const fresh = counter.write(by(2, 20n), 20n, newer.value + 1, newer.version)
    assert.equal(fresh.accepted, true)
    assert.deepEqual(check(history([stale, fresh], historyNow() + 1)).violations, [])
  })
})
