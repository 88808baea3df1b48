/**
 * One verification run: the store probed, worker processes started and
 * replaced, holders paused and killed, the user's fault command run, and
 * every history checked by the chaos checker into a VerifyReport.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseStoreUrl } from '../../internal-api.js'
import { EXIT, UsageError } from '../common.js'
import { check, type Finding } from '../../chaos/checker.js'
import { offeredPrimitives } from '../../chaos/client.js'
import { knownLimitOf } from '../../chaos/exceptions.js'
import { historyNow, type Fault, type History, type HistoryEvent, type Primitive } from '../../chaos/history.js'
import { coverageOf } from '../../chaos/report.js'
import { FencedCounter, FencedNames } from '../../chaos/resource.js'
import { afterOwnPause, effectOf, outagesOf, stallsOf, unavailableCalls, workerTarget, type Unavailable } from './history.js'
import type { VerifierMessage, WorkerMessage, WorkerSettings, Workload } from './protocol.js'
import { storeKindOf, type VerifyReport } from './report.js'
import { connect } from '../../index.js'

export interface Settings {
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
  /** Where to write the whole history; unset, a run with a violation writes it to the temporary directory. */
  historyFile: string | undefined
}

export function primitivesOf(workload: Workload, offered: readonly Primitive[], store: string): Primitive[] {
  if (workload === 'counter') return ['mutex']
  if (workload === 'mixed') return [...offered]
  if (!offered.includes(workload)) throw new UsageError(`--workload ${workload}: ${store} does not offer it (it offers ${offered.join(', ')})`)
  return [workload]
}

export async function probeStore(url: string): Promise<Primitive[]> {
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

export async function runVerification(settings: Settings, primitives: Primitive[]): Promise<VerifyReport> {
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
  // The evidence in full (every call, grant, renewal and fault, on one
  // monotonic clock): a violation is decided from it, so one is never lost
  // with the run's temporary files.
  const historyFile = settings.historyFile ?? (violations.length > 0 ? join(tmpdir(), `baton-verify-${settings.seed}-${process.pid}.json`) : undefined)
  if (historyFile !== undefined) writeFileSync(historyFile, JSON.stringify(history))

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
    ...(historyFile === undefined ? {} : { historyFile }),
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
