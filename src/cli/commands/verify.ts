/**
 * `baton verify`: a Jepsen-style check of the user's own store, on the
 * chaos suite's checker. Worker processes run a workload (the fenced
 * counter, or seeded chaos plans of one primitive or all) and record their
 * history; meanwhile this command pauses holders past their ttl (SIGSTOP),
 * kills workers (SIGKILL) and runs the user's own fault command. At the end
 * src/chaos/checker.ts judges safety (exit 1), and the history says apart
 * when the store did not answer and what each fault did (exit 69).
 */
import { writeFileSync } from 'node:fs'
import { parseDuration, parseStoreUrl } from '../../internal-api.js'
import { EXIT, intFlag, JSON_OPTION, parse, print, STORE_OPTION, storeUrl, toJson, UsageError, type Command } from '../common.js'
import { WORKLOADS, type WorkerSettings, type Workload } from '../verify/protocol.js'
import { runWorker } from '../verify/worker.js'
import { exitStatusOf, formatReport } from '../verify/report.js'
import { primitivesOf, probeStore, runVerification, type Settings } from '../verify/run.js'

const USAGE = 'usage: baton verify --store URL [--workload W] [--workers N] [--seconds S] [--ttl T] [--hold T] [--pause EVERY] [--kill EVERY] [--fault-cmd SHELL --fault-every EVERY] [--seed N] [--no-fencing] [--json] [--history FILE]'

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
  --history FILE   write the whole history (every call, grant and fault) as
                   JSON; a run with a violation writes it anyway, and says where

examples:
  baton verify --store redis://10.0.0.5:6379
  baton verify --store etcd://10.0.0.7:2379 --workload mixed --seconds 120 --json
  baton verify --store redis+sentinel://10.0.0.5:26379/mymaster --seconds 90 \\
    --fault-cmd 'redis-cli -h 10.0.0.5 -p 26379 SENTINEL FAILOVER mymaster' --fault-every 20s

Details and a worked example per store: docs/verify.md`

/** Said before the run, not after a minute of it: the history file can be written. */
function writableOrUsage(path: string): void {
  if (path.trim() === '') throw new UsageError('--history is empty')
  try {
    writeFileSync(path, '')
  } catch (error) {
    throw new UsageError(`--history ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

/** A CLI duration: a bare number is seconds, as in flock and timeout(1). */
function durationArg(value: string, flag: string, allowZero = false): number {
  return parseDuration(/^\d+(\.\d+)?$/.test(value) ? `${value}s` : value, flag, { allowZero })
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
      'no-fencing': { type: 'boolean' }, history: { type: 'string' },
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
      historyFile: v.history,
    }
    if (settings.historyFile !== undefined) writableOrUsage(settings.historyFile)
    if (settings.holdMs >= settings.ttlMs) throw new UsageError(`--hold (${settings.holdMs} ms) must be shorter than --ttl (${settings.ttlMs} ms): workers renew nothing`)
    const offered = await probeStore(settings.url)
    const primitives = primitivesOf(settings.workload, offered, parseStoreUrl(settings.url).display)
    const report = await runVerification(settings, primitives)
    print(settings.json ? toJson(report) : formatReport(report))
    return exitStatusOf(report)
  },
}

/** The primitives a workload's plans use; one the store does not offer is a usage error. */
