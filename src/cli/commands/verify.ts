/**
 * `baton verify`: a Jepsen-style check of the user's own store. Worker
 * processes take one lock and do fenced read-modify-write cycles on a counter
 * this command keeps; meanwhile it pauses holders past their ttl (SIGSTOP)
 * and kills them (SIGKILL), and at the end checks, from the resource's side,
 * that no two holders held at once, tokens only went up, no stale write got
 * through, no update was lost, and work went on after every fault.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { parseDuration, parseStoreUrl } from '../../internal-api.js'
import { EXIT, intFlag, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, toJson, UsageError, type Command } from '../common.js'
import { historyNow } from '../verify/clock.js'
import { afterOwnPause, describeViolation, findViolations, outagesOf, Resource, type Fault, type Outage } from '../verify/history.js'
import type { VerifierMessage, WorkerMessage, WorkerSettings } from '../verify/protocol.js'
import { runWorker } from '../verify/worker.js'
import { connect } from '../../index.js'

const USAGE = 'usage: baton verify --store URL [--workers N] [--seconds S] [--ttl T] [--hold T] [--pause EVERY] [--kill EVERY] [--no-fencing] [--json]'

const HELP = `${USAGE}

Checks that a store keeps baton's promise on YOUR deployment. Worker
processes take one lock ("baton-verify/<random>") and do read-modify-write
cycles on a counter this command keeps, sending their fencing token with each
write; the counter refuses tokens below the highest it accepted (as
baton/fencing's guards do). Meanwhile the command pauses the holder past its
ttl (SIGSTOP, then SIGCONT) and kills workers (SIGKILL; a new one starts).

At the end it checks, from the counter's side:
  - no two holders held the lock at once (each hold counted until it said it
    stopped, or until its lease deadline),
  - fencing tokens only went up from one holder to the next,
  - no write with a stale token was accepted, no update was lost,
  - writes went on after every fault.
It prints a report and exits 1 on any violation, with the evidence.

A store that does not answer for a while (restarted, failed over) is not a
violation: workers retry (connect included), dead workers are replaced, and
the report lists when the store did not answer, apart from the violations.

exit status:
  0   no violation, and the store answered throughout
  1   a violation (or a worker crashed: a defect, its lines say which)
  69  no violation, but the store did not answer at times (or at all at
      the start), or no write got through for a while after a fault (a
      stall: liveness, not safety): what was checked held

options (a bare number of seconds, or 500ms, 2m, ...):
  --workers N      worker processes, 2 to 32 (default 3)
  --seconds S      how long to run (default 20)
  --ttl T          the lock's ttl (default 2s); workers renew nothing
  --hold T         how long each hold does its cycles (default 200ms)
  --pause EVERY    pause the holder past its ttl this often (default 5s; 0: never)
  --kill EVERY     kill a worker this often (default 7s; 0: never)
  --no-fencing     the counter accepts every token: shows what a lock alone
                   can not prevent (a holder paused past its ttl writes last)
  --json           the report as JSON (for CI)

Destructive faults on the store itself (failover, restart, data loss) are
yours to cause while it runs; verify reports what they did.

examples:
  baton verify --store redis://10.0.0.5:6379
  baton verify --store etcd://10.0.0.7:2379 --seconds 120 --workers 5 --json`

/** A CLI duration: a bare number is seconds, as in flock and timeout(1). */
function durationArg(value: string, flag: string, allowZero = false): number {
  return parseDuration(/^\d+(\.\d+)?$/.test(value) ? `${value}s` : value, flag, { allowZero })
}

interface Settings {
  url: string
  workers: number
  seconds: number
  ttlMs: number
  holdMs: number
  pauseEveryMs: number
  killEveryMs: number
  fencing: boolean
  json: boolean
}

export const verify: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    if (args[0] === '--worker') {
      await runWorker(JSON.parse(args[1] ?? '{}') as WorkerSettings)
      return EXIT.ok
    }
    const parsed = parse(args, {
      ...STORE_OPTION, ...JSON_OPTION,
      workers: { type: 'string' }, seconds: { type: 'string' }, ttl: { type: 'string' }, hold: { type: 'string' },
      pause: { type: 'string' }, kill: { type: 'string' }, 'no-fencing': { type: 'boolean' },
    }, { min: 0, max: 0, names: '' })
    if (!parsed) { print(HELP); return EXIT.ok }
    const v = parsed.values
    const settings: Settings = {
      url: storeUrl(v.store),
      workers: intFlag(v.workers ?? '3', '--workers', 2, 32),
      seconds: durationArg(v.seconds ?? '20', '--seconds') / 1000,
      ttlMs: durationArg(v.ttl ?? '2s', '--ttl'),
      holdMs: durationArg(v.hold ?? '200ms', '--hold'),
      pauseEveryMs: durationArg(v.pause ?? '5s', '--pause', true),
      killEveryMs: durationArg(v.kill ?? '7s', '--kill', true),
      fencing: !v['no-fencing'],
      json: v.json === true,
    }
    if (settings.holdMs >= settings.ttlMs) throw new UsageError(`--hold (${settings.holdMs} ms) must be shorter than --ttl (${settings.ttlMs} ms): workers renew nothing`)
    await probeStore(settings.url)
    const report = await runVerification(settings)
    print(settings.json ? toJson(report) : formatReport(report))
    return exitStatusOf(report)
  },
}

export interface VerifyReport {
  store: string
  name: string
  workers: number
  seconds: number
  ttlMs: number
  fencing: boolean
  holds: number
  handovers: number
  writesAccepted: number
  staleWritesRefused: number
  faults: { kind: string; worker: number; at: number; healedAt?: number }[]
  acquireWaitMs: { p50: number; p99: number; max: number }
  violations: { kind: string; evidence: string; tokens: string[] }[]
  /** Stretches when the store did not answer a worker's calls (ms from the start): unavailability, not violations. */
  unavailable: { from: number; to: number; recoveredAt?: number; calls: number; workers: number[]; during: string[]; message: string }[]
  /**
   * Faults after which no write was accepted within the progress window. A
   * stall is liveness, not safety: a busy machine causes it as readily as a
   * store, so it is reported apart from the violations (exit 69, not 1).
   */
  stalls: { kind: string; evidence: string }[]
  /** Workers that died for a reason of their own (not our kill, not the store): defects of the client. Each was replaced. */
  workerFailures: string[]
  /** Calls that failed in a worker this run paused, during the pause or within two leases after it: the pause's doing, not the store's. */
  failedCallsAfterOwnPause: number
  /** No violation and no worker failure. */
  passed: boolean
}

/** The exit status of a report: a violation or a crash beats unavailability. */
export function exitStatusOf(report: VerifyReport): number {
  if (!report.passed) return EXIT.failure
  return report.unavailable.length > 0 || report.stalls.length > 0 ? EXIT.unavailable : EXIT.ok
}

/**
 * One look at the store before any worker starts: a URL the library can not
 * use (exit 2) or a store that does not answer (exit 69) is said at once, in
 * one line, instead of as every worker's failure at the end of the run.
 */
async function probeStore(url: string): Promise<void> {
  const baton = await connect(url)
  try {
    await baton.inspect('baton-verify/probe')
  } finally {
    await baton.close().catch(() => {})
  }
}

/**
 * Pauses a worker for `ms` through a small detached shell that stops it and
 * resumes it itself: if this command dies meanwhile (even by SIGKILL), the
 * worker is still resumed, finds its channel to us gone and exits, instead of
 * staying stopped for ever. Calls `resumed` when the shell is done.
 */
function pauseWorker(pid: number, ms: number, resumed: () => void): ChildProcess {
  const sitter = spawn('/bin/sh', ['-c', 'kill -STOP "$1" && sleep "$2"; kill -CONT "$1"', 'baton-verify-pause', String(pid), (ms / 1000).toFixed(3)], {
    detached: true,
    stdio: 'ignore',
  })
  sitter.once('exit', resumed)
  sitter.once('error', resumed)
  sitter.unref()
  return sitter
}

async function runVerification(settings: Settings): Promise<VerifyReport> {
  const name = `baton-verify/${randomBytes(6).toString('hex')}`
  const resource = new Resource(settings.fencing)
  const waits: number[] = []
  const workers = new Map<number, ChildProcess>()
  /** The worker holding now, as far as its messages say (the one a pause should hit). */
  let holder: number | undefined
  let nextWorker = 1
  const failures: string[] = []
  /** Workers this command killed (a fault it caused, not a death to report). */
  const killed = new Set<number>()
  const startedAt = historyNow()
  const workerSettings: WorkerSettings = { url: settings.url, name, ttlMs: settings.ttlMs, holdMs: settings.holdMs }

  const start = (): number => {
    const id = nextWorker++
    // The same entry point as this process (the bundled bin, or dist/src/cli/bin.js).
    const child = fork(process.argv[1]!, ['verify', '--worker', JSON.stringify(workerSettings)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
    // A send or signal to a worker that has just exited must not crash the verifier (EPIPE).
    child.on('error', () => {})
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-2000) })
    child.on('exit', (code, signal) => {
      workers.delete(id)
      if (holder === id) holder = undefined
      if (stopping || killed.has(id)) return
      // Died on its own: say why, and keep the number of workers up.
      if (code === EXIT.unavailable) resource.unavailable.push({ worker: id, at: historyNow(), during: 'exit', message: stderr.trim().split('\n').at(-1) ?? '' })
      else failures.push(`worker ${id} exited (${signal ?? code}): ${stderr.trim()}`)
      const replace = setTimeout(() => { if (!stopping) start() }, 250)
      timers.push(replace)
    })
    child.on('message', (message: WorkerMessage) => {
      const reply = (answer: VerifierMessage) => { if (child.connected) child.send(answer) }
      switch (message.type) {
        case 'granted':
          holder = id
          waits.push(message.waitedMs)
          resource.holds.push({ worker: id, token: BigInt(message.token), grantedAt: message.at, validUntil: message.validUntil })
          break
        case 'read':
          reply({ type: 'read', id: message.id, ...resource.read(BigInt(message.token)) })
          break
        case 'write': {
          const write = resource.write(id, BigInt(message.token), message.value, message.readVersion)
          reply({ type: 'write', id: message.id, accepted: write.accepted, ...(resource.highest === undefined ? {} : { highest: resource.highest.toString() }) })
          break
        }
        case 'ended': {
          const hold = resource.holds.findLast((h) => h.worker === id && h.token === BigInt(message.token))
          if (hold) hold.endedAt = message.at
          if (holder === id) holder = undefined
          break
        }
        case 'failed':
          failures.push(`worker ${id}: ${message.message}`)
          break
        case 'unavailable':
          resource.unavailable.push({ worker: id, at: message.at, during: message.during, message: message.message })
      }
    })
    workers.set(id, child)
    return id
  }

  let stopping = false
  const pausing = new Set<number>()
  // Interrupted (Ctrl-C, kill): take the workers down with us, paused ones too.
  const interrupted = (signal: NodeJS.Signals) => {
    stopping = true
    for (const child of workers.values()) { child.kill('SIGCONT'); child.kill('SIGKILL') }
    process.exit(signal === 'SIGINT' ? 130 : 143)
  }
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)
  const timers: NodeJS.Timeout[] = []
  for (let i = 0; i < settings.workers; i++) start()
  const pick = (): number | undefined => holder ?? [...workers.keys()][Math.floor(Math.random() * workers.size)]
  if (settings.pauseEveryMs > 0) {
    timers.push(setInterval(() => {
      const id = pick()
      const child = id === undefined ? undefined : workers.get(id)
      if (!child || id === undefined) return
      if (child.pid === undefined || pausing.has(id)) return
      const fault: Fault = { kind: 'pause', worker: id, at: historyNow() }
      resource.faults.push(fault)
      pausing.add(id)
      // Past the ttl, so the store lets the next holder in while this one sleeps.
      pauseWorker(child.pid, settings.ttlMs * 1.5 + 250, () => { pausing.delete(id); fault.healedAt = historyNow() })
    }, settings.pauseEveryMs))
  }
  if (settings.killEveryMs > 0) {
    timers.push(setInterval(() => {
      const id = pick()
      const child = id === undefined ? undefined : workers.get(id)
      if (!child || id === undefined) return
      const fault: Fault = { kind: 'kill', worker: id, at: historyNow() }
      resource.faults.push(fault)
      killed.add(id)
      child.kill('SIGCONT') // a paused worker dies as well
      child.kill('SIGKILL')
      start()
      fault.healedAt = historyNow()
    }, settings.killEveryMs))
  }

  await new Promise((resolve) => setTimeout(resolve, settings.seconds * 1000))
  stopping = true
  for (const timer of timers) clearTimeout(timer)
  const endedAt = historyNow()
  await Promise.all([...workers.values()].map((child) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.kill('SIGCONT')
    const force = setTimeout(() => child.kill('SIGKILL'), settings.ttlMs * 2 + 2000)
    child.once('exit', () => { clearTimeout(force); resolve() })
    if (child.connected) child.send({ type: 'stop' } satisfies VerifierMessage)
    else child.kill('SIGKILL')
  })))
  process.off('SIGINT', interrupted)
  process.off('SIGTERM', interrupted)

  // After a fault the lock is free again within one lease (the store may
  // have raised the ttl to its floor: use the longest lease granted); three
  // leases and two seconds cover the waiters' own retries on a loaded machine.
  const longestLeaseMs = resource.holds.reduce((longest, h) => Math.max(longest, h.validUntil - h.grantedAt), settings.ttlMs)
  const progressWindowMs = longestLeaseMs * 3 + 2000
  // A worker resumed from a pause may find its client's session or lease
  // gone with the pause (etcd, ZooKeeper): its calls fail until the client
  // has made a new one, within a lease or two. That is the pause, not the store.
  const afterPauseMs = longestLeaseMs * 2 + 1000
  const found = findViolations(resource, { progressWindowMs, endedAt, afterPauseMs })
  const violations = found.filter((v) => v.kind !== 'no-progress')
  const stalls = found.filter((v) => v.kind === 'no-progress')
  const sorted = [...waits].sort((a, b) => a - b)
  const quantile = (q: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  const holds = [...resource.holds].sort((a, b) => a.grantedAt - b.grantedAt)
  const since = (at: number) => Math.round(at - startedAt)
  const outages = outagesOf(resource, afterPauseMs)
  const report: VerifyReport = {
    store: parseStoreUrl(settings.url).display,
    name,
    workers: settings.workers,
    seconds: settings.seconds,
    ttlMs: settings.ttlMs,
    fencing: settings.fencing,
    holds: holds.length,
    handovers: holds.filter((h, i) => i > 0 && holds[i - 1]!.worker !== h.worker).length,
    writesAccepted: resource.writes.filter((w) => w.accepted).length,
    staleWritesRefused: resource.writes.filter((w) => !w.accepted).length + resource.staleReads,
    faults: resource.faults.map((f) => ({ kind: f.kind, worker: f.worker, at: since(f.at), ...(f.healedAt === undefined ? {} : { healedAt: since(f.healedAt) }) })),
    acquireWaitMs: { p50: quantile(0.5), p99: quantile(0.99), max: sorted.at(-1) ?? 0 },
    violations: violations.map((violation) => ({
      kind: violation.kind,
      evidence: describeViolation(violation, startedAt),
      tokens: 'first' in violation ? [violation.first.token, violation.second.token].map(String)
        : 'earlier' in violation ? [violation.earlier.token, violation.later.token].map(String)
          : 'write' in violation ? [String(violation.write.token)] : [],
    })),
    unavailable: outages.map((o: Outage) => ({
      from: since(o.from), to: since(o.to), ...(o.recoveredAt === undefined ? {} : { recoveredAt: since(o.recoveredAt) }),
      calls: o.calls, workers: o.workers, during: o.during, message: o.message,
    })),
    stalls: stalls.map((stall) => ({ kind: stall.kind, evidence: describeViolation(stall, startedAt) })),
    workerFailures: failures,
    failedCallsAfterOwnPause: resource.unavailable.filter((e) => afterOwnPause(resource, e, afterPauseMs)).length,
    passed: false,
  }
  // A store that never answered is unavailability, said as such; one that
  // answered and still let nobody write stalled the run: liveness, like any
  // stall (a machine too busy to run the workers does the same).
  if (report.writesAccepted === 0 && outages.length === 0) {
    report.stalls.push({ kind: 'no-progress', evidence: 'no write was accepted at all: the workers never held the lock' })
  }
  report.passed = report.violations.length === 0 && failures.length === 0
  return report
}

function formatReport(r: VerifyReport): string {
  const pauses = r.faults.filter((f) => f.kind === 'pause').length
  const kills = r.faults.filter((f) => f.kind === 'kill').length
  const lines = [
    `baton verify: ${r.store}, lock "${r.name}", ${r.workers} workers, ${r.seconds} s, ttl ${r.ttlMs} ms, fencing ${r.fencing ? 'on' : 'OFF'}`,
    `holds ${r.holds}, hand-overs ${r.handovers}, writes accepted ${r.writesAccepted}, stale reads and writes refused ${r.staleWritesRefused}`,
    `faults: ${pauses} pauses past the ttl, ${kills} kills`,
    `acquire wait: p50 ${r.acquireWaitMs.p50} ms, p99 ${r.acquireWaitMs.p99} ms, max ${r.acquireWaitMs.max} ms`,
  ]
  if (r.staleWritesRefused > 0) lines.push(`the counter refused ${r.staleWritesRefused} read(s)/write(s) from holders a later holder had overtaken: fencing at work`)
  const s = (ms: number) => `+${(ms / 1000).toFixed(3)} s`
  if (r.unavailable.length > 0) {
    lines.push(`UNAVAILABLE: the store did not answer ${r.unavailable.length} time(s) (not a violation; nothing was checked while it did not answer)`)
    for (const o of r.unavailable) {
      lines.push(`  from ${s(o.from)} to ${s(o.to)}${o.recoveredAt === undefined ? ', no grant after it' : `, next grant ${s(o.recoveredAt)}`}: ` +
        `${o.calls} failed call(s) (${o.during.join(', ')}) by worker(s) ${o.workers.join(', ')}: ${o.message}`)
    }
  }
  if (r.stalls.length > 0) {
    lines.push(`STALLED: ${r.stalls.length} time(s) no write got through soon after a fault (liveness, not a violation: a busy machine does this too)`)
    for (const stall of r.stalls.slice(0, 5)) lines.push(`  ${stall.evidence}`)
  }
  if (r.failedCallsAfterOwnPause > 0) lines.push(`${r.failedCallsAfterOwnPause} call(s) failed in workers during or just after their pause: their own stall, not the store's`)
  if (r.workerFailures.length > 0) {
    lines.push(`WORKER FAILURE: ${r.workerFailures.length} worker(s) died of their own accord (each was replaced)`)
    for (const f of r.workerFailures.slice(0, 5)) lines.push(`  ${f}`)
  }
  if (r.violations.length === 0) lines.push(r.passed ? 'PASS: no violation' : 'no violation')
  else {
    lines.push(`FAIL: ${r.violations.length} violation(s)`)
    const shown = r.violations.slice(0, 20)
    for (const v of shown) lines.push(`  ${v.kind}: ${v.evidence}`)
    if (r.violations.length > shown.length) lines.push(`  … and ${r.violations.length - shown.length} more (--json lists all)`)
  }
  return lines.join('\n')
}
