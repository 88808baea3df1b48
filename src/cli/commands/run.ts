import { constants } from 'node:os'
import { connect } from '../../connect.js'
import { isBatonError } from '../../core/errors.js'
import type { Lease } from '../../core/lease.js'
import type { LockHandle } from '../../primitives/lock.js'
import type { LockView } from '../../baton.js'
import { FORWARDED_SIGNALS, runChild } from '../child.js'
import { durationFlag, EXIT, intFlag, parse, print, STORE_OPTION, storeUrl, timeLeft, UsageError, warn, type Command } from '../common.js'

const USAGE = `usage: baton run <name> [--ttl 30s] [-w|--wait 10s] [-n|--nonblock] [-E|--conflict-exit-code 75]
                 [--permits N] [--fair] [--read|--write] [--kill-grace 5s] [--store URL] -- <command> [args…]`

const HELP = `${USAGE}

Holds the lock <name> while <command> runs, like flock(1) for one machine or
"consul lock" / "etcdctl lock" for a fleet. The lease is renewed while the
command runs and released when it exits.

The command gets BATON_LOCK (the name), BATON_TOKEN (the fencing token: pass it
to whatever the lock protects so it can refuse a stale holder) and
BATON_LEASE_EXPIRES (epoch ms the lease ran to when the command started; it is
renewed while the command runs).

options:
  --ttl D                  lease length; renewed about every ttl/3 (default 30s)
  -w, --wait D             give up after waiting D (default: wait until granted)
  -n, --nonblock           give up at once if the lock is held
  -E, --conflict-exit-code N   exit code when the lock was not had (default 75)
  --permits N              a semaphore: at most N commands at once
  --fair                   grant strictly in arrival order
  --read | --write         the shared or exclusive side of a read-write lock
  --kill-grace D           when the hold is lost: SIGTERM, then SIGKILL after D (default 5s)
  --store URL              the store (default: BATON_URL); memory:// is refused
Durations: 250ms, 30s, 5m, 1h, or bare milliseconds.

exit status:
  the command's own code; 128+N when it died of signal N; 126/127 when it
  could not be started; 75 (or -E) when the lock was not had; 70 when the hold
  was lost while it ran (the command was stopped); 69 store unreachable;
  77 refused by the server's auth; 2 bad usage.
SIGINT, SIGTERM and SIGHUP are passed on to the command; the lock is released
once it has exited.

examples:
  export BATON_URL=redis://10.0.0.5:6379
  baton run nightly-report -- ./report.sh --full
  baton run --nonblock deploy/web -- ./deploy.sh        # skip if a deploy runs
  baton run -w 2m -E 0 migrations -- npm run migrate   # wait 2 min, quietly skip after
  baton run --permits 4 gpu -- python train.py          # at most 4 at once
  baton run --read config -- ./read-config.sh`

const OPTIONS = {
  ...STORE_OPTION,
  'ttl': { type: 'string' },
  'wait': { type: 'string', short: 'w' },
  'nonblock': { type: 'boolean', short: 'n' },
  'conflict-exit-code': { type: 'string', short: 'E' },
  'permits': { type: 'string' },
  'fair': { type: 'boolean' },
  'read': { type: 'boolean' },
  'write': { type: 'boolean' },
  'kill-grace': { type: 'string' },
} as const

export const run: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const parsed = parse(args, OPTIONS, { min: 1, names: 'the lock name and the command' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values, positionals } = parsed
    const [name, ...command] = positionals as [string, ...string[]]
    if (command.length === 0) throw new UsageError('missing the command to run (put it after --)')
    if (values.read && values.write) throw new UsageError('--read and --write exclude each other')
    if (values.permits !== undefined && (values.read || values.write)) throw new UsageError('--permits is a semaphore; it does not go with --read or --write')
    if (values.nonblock && values.wait !== undefined) throw new UsageError('--nonblock and --wait exclude each other')
    const ttl = durationFlag(values.ttl ?? '30s', '--ttl')
    const waitMs = values.nonblock ? 0 : values.wait === undefined ? Infinity : durationFlag(values.wait, '--wait', true)
    const conflictCode = intFlag(values['conflict-exit-code'] ?? String(EXIT.conflict), '--conflict-exit-code', 0, 255)
    const permits = values.permits === undefined ? undefined : intFlag(values.permits, '--permits', 1, 1_000_000)
    const killGraceMs = durationFlag(values['kill-grace'] ?? '5s', '--kill-grace', true)
    const fair = values.fair ?? false
    const url = storeUrl(values.store)

    const baton = await connect(url)
    let released = false
    try {
      const handle: LockHandle = permits !== undefined
        ? baton.semaphore(name, { permits, ttl, fair })
        : values.read || values.write
          ? baton.rwlock(name, { ttl, fair })[values.read ? 'read' : 'write']()
          : baton.mutex(name, { ttl, fair, reentrant: false })

      // A signal while waiting stops the wait and ends like the command would have.
      const waiting = new AbortController()
      let caught: NodeJS.Signals | undefined
      const onSignal = (signal: NodeJS.Signals) => {
        caught = signal
        waiting.abort(signal)
      }
      for (const signal of FORWARDED_SIGNALS) process.on(signal, onSignal)
      let lease: Lease | null
      try {
        lease = waitMs === 0
          ? await handle.tryAcquire({ autoExtend: true })
          : await handle.acquire({ wait: waitMs, signal: waiting.signal, autoExtend: true })
      } catch (error) {
        if (caught && isBatonError(error, 'ABORTED')) return 128 + (constants.signals[caught] ?? 0)
        if (!isBatonError(error, 'LOCK_TIMEOUT')) throw error
        lease = null
      } finally {
        for (const signal of FORWARDED_SIGNALS) process.off(signal, onSignal)
      }
      if (!lease) {
        const view = await baton.inspect(name).catch(() => null)
        const how = waitMs === 0 ? 'with --nonblock' : `within ${values.wait}`
        warn(`baton run: "${name}" was not acquired ${how}: ${describeHolders(view)}`)
        return conflictCode
      }

      const outcome = await runChild(command, {
        env: {
          ...process.env,
          BATON_LOCK: name,
          BATON_TOKEN: lease.token.toString(),
          BATON_LEASE_EXPIRES: String(lease.expiresAt),
        },
        stop: lease.signal,
        killGraceMs,
      })
      if (outcome.spawnError) warn(`baton run: ${outcome.spawnError}`)
      if (outcome.stoppedBy) {
        const reason = lease.signal.reason instanceof Error ? lease.signal.reason.message.replace(/^baton: /, '') : 'lost'
        warn(`baton run: ${reason}; stopped "${command.join(' ')}" with ${outcome.stoppedBy} (exit ${outcome.exitCode})`)
        return EXIT.lost
      }
      try {
        await lease.release()
        released = true
      } catch (error) {
        // The command's result stands; the lease runs out by its ttl.
        warn(`baton run: could not release "${name}" (${error instanceof Error ? error.message : String(error)}); it expires within ${ttl} ms`)
      }
      return outcome.exitCode
    } finally {
      const closing = baton.close().catch(() => undefined)
      // Once the store has confirmed the release, closing has nothing left to
      // undo there: exit without waiting for the connections' goodbyes.
      if (!released) await closing
    }
  },
}

/** "held by a.b (exclusive, token 17, 12.3s left); 2 waiting" */
export function describeHolders(view: LockView | null): string {
  if (!view || view.holders.length === 0) return 'it is taken (the holder could not be read)'
  const now = Date.now()
  const who = view.holders.map((h) => `${h.owner} (${h.mode}, token ${h.token}, ${timeLeft(h.expiresAt, now)} left)`)
  const waiting = view.waiters.length ? `; ${view.waiters.length} waiting` : ''
  const head = view.kind === 'semaphore' ? `all ${view.permits} permits are held by ` : 'held by '
  return `${head}${who.join(', ')}${waiting}`
}
