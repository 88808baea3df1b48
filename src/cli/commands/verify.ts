/**
 * `baton verify`: a Jepsen-style check of the user's own store, on the
 * chaos suite's checker. Worker processes run a workload (the fenced
 * counter, or seeded chaos plans of one primitive or all) and record their
 * history; meanwhile this command pauses holders past their ttl (SIGSTOP),
 * kills workers (SIGKILL) and runs the user's own fault command. At the end
 * src/chaos/checker.ts judges safety (exit 1), and the history says apart
 * when the store did not answer and what each fault did (exit 69).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseDuration, parseStoreUrl } from '../../internal-api.js'
import { EXIT, intFlag, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, toJson, UsageError, type Command } from '../common.js'
import { check, type Finding } from '../../chaos/checker.js'
import { offeredPrimitives } from '../../chaos/client.js'
import { knownLimitOf } from '../../chaos/exceptions.js'
import { historyNow, type Fault, type History, type HistoryEvent, type Primitive } from '../../chaos/history.js'
import { coverageOf } from '../../chaos/report.js'
import { FencedCounter, FencedNames } from '../../chaos/resource.js'
import { afterOwnPause, effectOf, outagesOf, stallsOf, unavailableCalls, workerTarget, type FaultEffect, type Unavailable } from '../verify/history.js'
import { WORKLOADS, type VerifierMessage, type WorkerMessage, type WorkerSettings, type Workload } from '../verify/protocol.js'
import { runWorker } from '../verify/worker.js'
import { connect } from '../../index.js'

const USAGE = 'usage: baton verify --store URL [--workload W] [--workers N] [--seconds S] [--ttl T] [--hold T] [--pause EVERY] [--kill EVERY] [--fault-cmd SHELL --fault-every EVERY] [--seed N] [--no-fencing] [--json]'

const HELP = `${USAGE}

Checks that a store keeps baton's promise on YOUR deployment, with the
checker of baton's own chaos suite. Worker processes run a workload on names
under "baton-verify/<random>", some client always waiting on each name, and
record what they did and saw. Meanwhile the command pauses holders past
their ttl (SIGSTOP, then SIGCONT), kills workers (SIGKILL; a new one starts)
and, with --fault-cmd, runs your own fault (a failover, a restart).

Workloads (--workload):
  counter    (default) one lock; read-modify-write cycles on a counter this
             command keeps, sending the fencing token with each read and
             write; the counter refuses tokens below the highest it saw
  mutex, fair, rwlock, semaphore, election, multi
             the chaos suite's seeded plans of that primitive: waits,
             releases, extends, downgrades, lapses, fenced writes, probes
  mixed      every primitive the store offers

At the end it checks the history: no two holders at once (no reader beside a
writer, no more weight than permits, no two leaders of one term), fencing
tokens only rose, no stale write was accepted, no update was lost. It prints
a report and exits 1 on any violation, with the evidence.

A store that does not answer for a while (restarted, failed over) is not a
violation: workers retry (connect included), dead workers are replaced, and
the report lists when the store did not answer, apart from the violations.
Each fault is listed with what it did: holds lost (and signalled), safety
violations near it, calls that failed, time until the next grant.

exit status:
  0   no violation, and the store answered throughout
  1   a violation (or a worker crashed: a defect, its lines say which)
  69  no violation, but the store did not answer at times (or at all at
      the start), or nothing was granted for a while after a fault (a
      stall: liveness, not safety): what was checked held

options (a bare number of seconds, or 500ms, 2m, ...):
  --workload W     counter (default), mutex, fair, rwlock, semaphore,
                   election, multi, mixed
  --workers N      worker processes, 2 to 32 (default 3; plans: 3 clients each)
  --seconds S      how long to run (default 20)
  --ttl T          the leases' ttl (default 2s); counter workers renew nothing
  --hold T         counter: how long each hold does its cycles (default 200ms)
  --pause EVERY    pause a holder past its ttl this often (default 5s; 0: never)
  --kill EVERY     kill a worker this often (default 7s; 0: never)
  --fault-cmd SH   your fault, run with /bin/sh -c every --fault-every
  --fault-every T  default 20s; the first run is one period in
  --seed N         the plans' seed (printed in every report: a replay)
  --no-fencing     the resource accepts every token: shows what a lock alone
                   can not prevent (a holder paused past its ttl writes last)
  --json           the report as JSON (for CI)

examples:
  baton verify --store redis://10.0.0.5:6379
  baton verify --store etcd://10.0.0.7:2379 --workload mixed --seconds 120 --json
  baton verify --store redis+sentinel://10.0.0.5:26379/mymaster --seconds 90 \\
    --fault-cmd 'redis-cli -h 10.0.0.5 -p 26379 SENTINEL FAILOVER mymaster' --fault-every 20s

Details and a worked example per store: docs/verify.md`

/** A CLI duration: a bare number is seconds, as in flock and timeout(1). */
function durationArg(value: string, flag: string, allowZero = false): number {
  return parseDuration(/^\d+(\.\d+)?$/.test(value) ? `${value}s` : value, flag, { allowZero })
}

interface Settings {
  url: string
  workload: Workload
  workers: number
  seconds: number
  ttlMs: number
  holdMs: number
  pauseEveryMs: number
  killEveryMs: number
  faultCmd: string | undefined
  faultEveryMs: number
  seed: number
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
      workload: { type: 'string' }, workers: { type: 'string' }, seconds: { type: 'string' }, ttl: { type: 'string' }, hold: { type: 'string' },
      pause: { type: 'string' }, kill: { type: 'string' }, 'fault-cmd': { type: 'string' }, 'fault-every': { type: 'string' }, seed: { type: 'string' },
      'no-fencing': { type: 'boolean' },
    }, { min: 0, max: 0, names: '' })
    if (!parsed) { print(HELP); return EXIT.ok }
    const v = parsed.values
    const workload = (v.workload ?? 'counter') as Workload
    if (!WORKLOADS.includes(workload)) throw new UsageError(`--workload must be one of ${WORKLOADS.join(', ')}, not "${v.workload}"`)
    if (v['fault-every'] !== undefined && v['fault-cmd'] === undefined) throw new UsageError('--fault-every needs --fault-cmd')
    if (v['fault-cmd'] !== undefined && v['fault-cmd'].trim() === '') throw new UsageError('--fault-cmd is empty')
    if (v.seed !== undefined && !/^\d{1,10}$/.test(v.seed)) throw new UsageError(`--seed must be a whole number, not "${v.seed}"`)
    const settings: Settings = {
      url: storeUrl(v.store),
      workload,
      workers: intFlag(v.workers ?? '3', '--workers', 2, 32),
      seconds: durationArg(v.seconds ?? '20', '--seconds') / 1000,
      ttlMs: durationArg(v.ttl ?? '2s', '--ttl'),
      holdMs: durationArg(v.hold ?? '200ms', '--hold'),
      pauseEveryMs: durationArg(v.pause ?? '5s', '--pause', true),
      killEveryMs: durationArg(v.kill ?? '7s', '--kill', true),
      faultCmd: v['fault-cmd'],
      faultEveryMs: durationArg(v['fault-every'] ?? '20s', '--fault-every'),
      seed: v.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(v.seed) >>> 0,
      fencing: !v['no-fencing'],
      json: v.json === true,
    }
    if (settings.holdMs >= settings.ttlMs) throw new UsageError(`--hold (${settings.holdMs} ms) must be shorter than --ttl (${settings.ttlMs} ms): workers renew nothing`)
    const offered = await probeStore(settings.url)
    const primitives = primitivesOf(settings.workload, offered, parseStoreUrl(settings.url).display)
    const report = await runVerification(settings, primitives)
    print(settings.json ? toJson(report) : formatReport(report))
    return exitStatusOf(report)
  },
}

/** The primitives a workload's plans use; one the store does not offer is a usage error. */
function primitivesOf(workload: Workload, offered: readonly Primitive[], store: string): Primitive[] {
  if (workload === 'counter') return ['mutex']
  if (workload === 'mixed') return [...offered]
  if (!offered.includes(workload)) throw new UsageError(`--workload ${workload}: ${store} does not offer it (it offers ${offered.join(', ')})`)
  return [workload]
}

/** The store kind the chaos suite's known exceptions name ("redis-sentinel", …), from the URL's scheme. */
export function storeKindOf(url: string): string {
  const scheme = parseStoreUrl(url).scheme
  const kinds: Record<string, string> = {
    rediss: 'redis', 'redis+sentinel': 'redis-sentinel', 'redis+cluster': 'redis-cluster', postgresql: 'postgres',
    mariadb: 'mysql', etcds: 'etcd', zk: 'zookeeper', https: 'http',
  }
  return kinds[scheme] ?? scheme
}

export interface VerifyReport {
  store: string
  /** The store kind the known exceptions name. */
  storeKind: string
  workload: Workload
  /** The names' prefix. */
  name: string
  seed: number
  primitives: Primitive[]
  workers: number
  seconds: number
  ttlMs: number
  fencing: boolean
  holds: number
  handovers: number
  writesAccepted: number
  staleWritesRefused: number
  /** Operations by primitive and kind, with how they ended. */
  ops: Record<string, { ok: number; busy: number; error: number }>
  /** Each fault with what it did. `at`, `healedAt`: ms from the start. */
  faults: { kind: string; target: string; at: number; healedAt?: number; detail?: string; effect: FaultEffect }[]
  acquireWaitMs: { p50: number; p99: number; max: number }
  /**
   * Safety violations (the chaos checker's properties: two-holders,
   * token-order, stale-write, lost-update, …), with the tokens of the holds
   * involved, and, where a documented limit of this store kind covers it,
   * that limit: said beside it, never excused.
   */
  violations: { kind: string; at: number; evidence: string; tokens: string[]; knownLimit?: string }[]
  /** Timing-dependent observations (a waiter not granted while the name looked free): not a verdict. */
  warnings: string[]
  /** Stretches when the store did not answer a worker's calls (ms from the start): unavailability, not violations. */
  unavailable: { from: number; to: number; recoveredAt?: number; calls: number; workers: number[]; during: string[]; message: string }[]
  /**
   * Faults after which nothing was granted within the progress window. A
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
export function exitStatusOf(report: Pick<VerifyReport, 'passed' | 'unavailable' | 'stalls'>): number {
  if (!report.passed) return EXIT.failure
  return report.unavailable.length > 0 || report.stalls.length > 0 ? EXIT.unavailable : EXIT.ok
}

/**
 * One look at the store before any worker starts: a URL the library can not
 * use (exit 2) or a store that does not answer (exit 69) is said at once, in
 * one line, instead of as every worker's failure at the end of the run.
 * Returns the primitives it offers.
 */
async function probeStore(url: string): Promise<Primitive[]> {
  const baton = await connect(url)
  try {
    await baton.inspect('baton-verify/probe')
    return offeredPrimitives(baton)
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

/** Runs `command` with /bin/sh; resolves with its exit status and the last line it printed. */
function runShell(command: string): Promise<{ code: number | null; lastLine: string }> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-2000) }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.once('error', (error) => resolve({ code: null, lastLine: String(error) }))
    child.once('close', (code) => resolve({ code, lastLine: output.trim().split('\n').at(-1) ?? '' }))
  })
}

async function runVerification(settings: Settings, primitives: Primitive[]): Promise<VerifyReport> {
  const prefix = `baton-verify/${randomBytes(6).toString('hex')}`
  const dir = mkdtempSync(join(tmpdir(), 'baton-verify-'))
  const counter = new FencedCounter(`${prefix}/counter`, settings.fencing)
  const fenced = new FencedNames()
  /** The verifier's own events: writes at the resource, faults. */
  const events: HistoryEvent[] = []
  const faults: Fault[] = []
  const connectFailures: Unavailable[] = []
  const workers = new Map<number, ChildProcess>()
  const files: string[] = []
  /** The counter worker holding now, as far as its messages say (the one a pause should hit). */
  let holder: number | undefined
  let nextWorker = 1
  const failures: string[] = []
  /** Workers this command killed (a fault it caused, not a death to report). */
  const killed = new Set<number>()
  const startedAt = historyNow()

  const start = (): number => {
    const id = nextWorker++
    const file = join(dir, `w${id}.jsonl`)
    files.push(file)
    const workerSettings: WorkerSettings = {
      url: settings.url, workload: settings.workload, process: id, file, prefix, ttlMs: settings.ttlMs, holdMs: settings.holdMs,
      seed: settings.seed, primitives, clients: 3,
    }
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
      if (code === EXIT.unavailable) connectFailures.push({ worker: id, at: historyNow(), during: 'exit', message: stderr.trim().split('\n').at(-1) ?? '' })
      else failures.push(`worker ${id} exited (${signal ?? code}): ${stderr.trim()}`)
      const replace = setTimeout(() => { if (!stopping) start() }, 250)
      timers.push(replace)
    })
    child.on('message', (message: WorkerMessage) => {
      const reply = (answer: VerifierMessage) => { if (child.connected) child.send(answer) }
      switch (message.type) {
        case 'holding':
          if (message.held) holder = id
          else if (holder === id) holder = undefined
          break
        case 'read':
          reply({ type: 'read', id: message.id, ...counter.read(BigInt(message.token)) })
          break
        case 'write': {
          const write = counter.write({ process: id, client: 0, lease: message.lease }, BigInt(message.token), message.value, message.readVersion)
          events.push(write)
          reply({ type: 'write', id: message.id, accepted: write.accepted })
          break
        }
        case 'fenced-write': {
          const write = fenced.write({ process: id, client: message.client, lease: message.lease }, message.name, BigInt(message.token))
          events.push(write)
          reply({ type: 'write', id: message.id, accepted: write.accepted })
          break
        }
        case 'failed':
          failures.push(`worker ${id}: ${message.message}`)
          break
        case 'unavailable':
          connectFailures.push({ worker: id, at: message.at, during: message.during, message: message.message })
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
    rmSync(dir, { recursive: true, force: true })
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
      const fault: Fault = { type: 'fault', kind: 'pause', target: workerTarget(id), at: historyNow() }
      faults.push(fault)
      pausing.add(id)
      // Past the ttl, so the store lets the next holder in while this one sleeps.
      pauseWorker(child.pid, settings.ttlMs * 1.5 + 250, () => {
        pausing.delete(id)
        fault.healedAt = historyNow()
        // Right after a stall is where a lapsed lease may still look held: look.
        if (child.connected) child.send({ type: 'probe' } satisfies VerifierMessage)
      })
    }, settings.pauseEveryMs))
  }
  if (settings.killEveryMs > 0) {
    timers.push(setInterval(() => {
      const id = pick()
      const child = id === undefined ? undefined : workers.get(id)
      if (!child || id === undefined) return
      const fault: Fault = { type: 'fault', kind: 'kill', target: workerTarget(id), at: historyNow() }
      faults.push(fault)
      killed.add(id)
      child.kill('SIGCONT') // a paused worker dies as well
      child.kill('SIGKILL')
      start()
      fault.healedAt = historyNow()
    }, settings.killEveryMs))
  }
  const faultCommands: Promise<void>[] = []
  if (settings.faultCmd !== undefined) {
    const command = settings.faultCmd
    let running = false
    timers.push(setInterval(() => {
      if (running || stopping) return // one at a time: a slow fault is not stacked
      running = true
      const fault: Fault = { type: 'fault', kind: 'fault-cmd', target: command, at: historyNow() }
      faults.push(fault)
      faultCommands.push(runShell(command).then(({ code, lastLine }) => {
        fault.healedAt = historyNow()
        Object.assign(fault, { detail: `exit ${code}${lastLine ? `: ${lastLine.slice(0, 200)}` : ''}` })
        running = false
      }))
    }, settings.faultEveryMs))
  }

  await new Promise((resolve) => setTimeout(resolve, settings.seconds * 1000))
  stopping = true
  for (const timer of timers) clearTimeout(timer)
  const endedAt = historyNow()
  // A fault command still running is the user's: let it finish, so its effect is in the history.
  await Promise.all(faultCommands)
  await Promise.all([...workers.values()].map((child) => new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.kill('SIGCONT')
    const force = setTimeout(() => child.kill('SIGKILL'), settings.ttlMs * 12 + 2000)
    child.once('exit', () => { clearTimeout(force); resolve() })
    if (child.connected) child.send({ type: 'stop' } satisfies VerifierMessage)
    else child.kill('SIGKILL')
  })))
  process.off('SIGINT', interrupted)
  process.off('SIGTERM', interrupted)

  for (const file of files) {
    let text = ''
    try { text = readFileSync(file, 'utf8') } catch { continue } // a worker killed before its first event
    for (const line of text.split('\n')) if (line) { try { events.push(JSON.parse(line) as HistoryEvent) } catch { /* a line cut by kill -9 */ } }
  }
  rmSync(dir, { recursive: true, force: true })
  events.push(...faults)
  events.sort((a, b) => a.at - b.at)
  const grants = events.flatMap((e) => e.type === 'grant' ? [e] : [])
  // After a fault the names are free again within one lease (the store may
  // have raised the ttl to its floor: use the longest lease granted).
  const longestLeaseMs = grants.reduce((longest, g) => Math.max(longest, g.deadline - g.at), settings.ttlMs)
  const history: History = { seed: settings.seed, store: storeKindOf(settings.url), events, ttlMs: longestLeaseMs, startedAt, endedAt }
  const verdict = check(history)
  // Verify asks whether YOUR deployment is safe: a known exception of the
  // store is said beside the violation, never excuses it.
  const violations: Finding[] = [...verdict.violations, ...verdict.excused].sort((a, b) => a.at - b.at)

  // Three leases and two seconds cover the waiters' own retries on a loaded machine.
  const progressWindowMs = longestLeaseMs * 3 + 2000
  // A worker resumed from a pause may find its client's session or lease
  // gone with the pause (etcd, ZooKeeper): its calls fail until the client
  // has made a new one, within a lease or two. That is the pause, not the store.
  const afterPauseMs = longestLeaseMs * 2 + 1000
  const calls = [...unavailableCalls(events), ...connectFailures]
  const grantTimes = grants.map((g) => g.at)
  const outages = outagesOf(calls, grantTimes, faults, afterPauseMs)
  const stalls = stallsOf(faults, grantTimes, outages, { windowMs: progressWindowMs, endedAt })
  const since = (at: number) => Math.round(at - startedAt)
  const s = (ms: number) => `+${(ms / 1000).toFixed(3)} s`

  const tokenOf = new Map(grants.map((g) => [g.lease, g.token]))
  const invokedAt = new Map<string, number>()
  const waits: number[] = []
  for (const e of events) {
    if (e.type === 'invoke') invokedAt.set(e.op, e.at)
    else if (e.type === 'grant' && invokedAt.has(e.op)) { waits.push(Math.round(e.at - invokedAt.get(e.op)!)); invokedAt.delete(e.op) }
  }
  const sorted = waits.sort((a, b) => a - b)
  const quantile = (q: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  const lastHolderOf = new Map<string, string>()
  let handovers = 0
  const leases = new Set<string>()
  for (const g of grants) {
    const who = `${g.process}/${g.client}`
    if (lastHolderOf.has(g.name) && lastHolderOf.get(g.name) !== who) handovers++
    lastHolderOf.set(g.name, who)
    leases.add(g.lease)
  }
  const writes = events.flatMap((e) => e.type === 'write' ? [e] : [])
  const coverage = coverageOf(history, verdict)
  const report: VerifyReport = {
    store: parseStoreUrl(settings.url).display,
    storeKind: history.store,
    workload: settings.workload,
    name: prefix,
    seed: settings.seed,
    primitives,
    workers: settings.workers,
    seconds: settings.seconds,
    ttlMs: settings.ttlMs,
    fencing: settings.fencing,
    holds: leases.size,
    handovers,
    writesAccepted: writes.filter((w) => w.accepted).length,
    staleWritesRefused: writes.filter((w) => !w.accepted).length + counter.staleReads,
    ops: coverage.ops,
    faults: faults.map((f) => ({
      kind: f.kind, target: f.target, at: since(f.at), ...(f.healedAt === undefined ? {} : { healedAt: since(f.healedAt) }),
      ...(f.detail === undefined ? {} : { detail: f.detail }),
      effect: effectOf(f, events, violations, calls, longestLeaseMs * 2),
    })),
    acquireWaitMs: { p50: quantile(0.5), p99: quantile(0.99), max: sorted.at(-1) ?? 0 },
    violations: violations.map((f) => {
      const limit = knownLimitOf(history.store, f.property)
      return {
        kind: f.property, at: since(f.at), evidence: f.evidence,
        tokens: f.involved.flatMap((lease) => tokenOf.has(lease) ? [tokenOf.get(lease)!] : []),
        ...(limit === undefined ? {} : { knownLimit: limit.why }),
      }
    }),
    warnings: verdict.warnings.map((f) => f.evidence),
    unavailable: outages.map((o) => ({
      from: since(o.from), to: since(o.to), ...(o.recoveredAt === undefined ? {} : { recoveredAt: since(o.recoveredAt) }),
      calls: o.calls, workers: [...o.workers], during: o.during, message: o.message,
    })),
    stalls: stalls.map((f) => ({ kind: 'no-progress', evidence: `no progress: nothing was granted within ${progressWindowMs} ms after the ${f.kind} of ${f.target} ended at ${s(since(f.healedAt ?? f.at))}` })),
    workerFailures: failures,
    failedCallsAfterOwnPause: calls.filter((e) => afterOwnPause(faults, e, afterPauseMs)).length,
    passed: false,
  }
  // A store that never answered is unavailability, said as such; one that
  // answered and still let nobody hold stalled the run: liveness, like any
  // stall (a machine too busy to run the workers does the same).
  if (report.holds === 0 && outages.length === 0) {
    report.stalls.push({ kind: 'no-progress', evidence: 'nothing was granted at all: the workers never held a lock' })
  }
  report.passed = report.violations.length === 0 && failures.length === 0
  return report
}

function formatReport(r: VerifyReport): string {
  const s = (ms: number) => `+${(ms / 1000).toFixed(3)} s`
  const count = (kind: string) => r.faults.filter((f) => f.kind === kind).length
  const ops = Object.entries(r.ops).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.ok}${v.busy ? `/${v.busy} busy` : ''}${v.error ? `/${v.error} err` : ''}`)
  const lines = [
    `baton verify: ${r.store} (${r.storeKind}), workload ${r.workload}${r.workload === 'counter' ? '' : ` (${r.primitives.join(', ')}), seed ${r.seed}`}, names "${r.name}/…", ` +
      `${r.workers} workers, ${r.seconds} s, ttl ${r.ttlMs} ms, fencing ${r.fencing ? 'on' : 'OFF'}`,
    `holds ${r.holds}, hand-overs ${r.handovers}, writes accepted ${r.writesAccepted}, stale reads and writes refused ${r.staleWritesRefused}`,
    `ops: ${ops.join(', ') || 'none'}`,
    `faults: ${count('pause')} pauses past the ttl, ${count('kill')} kills${count('fault-cmd') ? `, ${count('fault-cmd')} runs of --fault-cmd` : ''}`,
    `acquire wait: p50 ${r.acquireWaitMs.p50} ms, p99 ${r.acquireWaitMs.p99} ms, max ${r.acquireWaitMs.max} ms`,
  ]
  for (const f of r.faults.filter((x) => x.kind === 'fault-cmd')) {
    const e = f.effect
    lines.push(`  fault-cmd at ${s(f.at)}${f.healedAt === undefined ? '' : `, done ${s(f.healedAt)}`}${f.detail ? ` (${f.detail})` : ''}: ` +
      `${e.holdsLost} hold(s) lost and signalled, ${e.violations} violation(s), ${e.failedCalls} call(s) unanswered, ` +
      (e.recoveredAfterMs === undefined ? 'no grant after it' : `next grant ${(e.recoveredAfterMs / 1000).toFixed(3)} s after it began`))
  }
  if (r.staleWritesRefused > 0) lines.push(`the resource refused ${r.staleWritesRefused} read(s)/write(s) from holders a later holder had overtaken: fencing at work`)
  if (r.unavailable.length > 0) {
    lines.push(`UNAVAILABLE: the store did not answer ${r.unavailable.length} time(s) (not a violation; nothing was checked while it did not answer)`)
    for (const o of r.unavailable) {
      lines.push(`  from ${s(o.from)} to ${s(o.to)}${o.recoveredAt === undefined ? ', no grant after it' : `, next grant ${s(o.recoveredAt)}`}: ` +
        `${o.calls} failed call(s) (${o.during.join(', ')}) by worker(s) ${o.workers.join(', ')}: ${o.message}`)
    }
  }
  if (r.stalls.length > 0) {
    lines.push(`STALLED: ${r.stalls.length} time(s) nothing was granted soon after a fault (liveness, not a violation: a busy machine does this too)`)
    for (const stall of r.stalls.slice(0, 5)) lines.push(`  ${stall.evidence}`)
  }
  if (r.warnings.length > 0) {
    lines.push(`WARNING (timing-dependent, not a verdict): ${r.warnings.length}`)
    for (const w of r.warnings.slice(0, 3)) lines.push(`  ${w}`)
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
    for (const v of shown) {
      lines.push(`  ${v.kind} at ${s(v.at)}: ${v.evidence}`)
      if (v.knownLimit) lines.push(`    a documented limit of ${r.storeKind}: ${v.knownLimit}`)
    }
    if (r.violations.length > shown.length) lines.push(`  … and ${r.violations.length - shown.length} more (--json lists all)`)
  }
  if (r.workload !== 'counter') lines.push(`replay this plan: --workload ${r.workload} --seed ${r.seed} --workers ${r.workers}`)
  return lines.join('\n')
}
