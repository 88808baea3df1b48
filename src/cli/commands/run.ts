import { constants } from 'node:os'
import { connect, isBatonError, type Lease, type LockHandle, type LockView } from '../../index.js'
import { describeProcess, MIN_TTL_MS } from '../../internal-api.js'
import { FORWARDED_SIGNALS, runChild } from '../child.js'
import {
  age, cliAdvice, DURATIONS_NOTE, durationFlag, EXIT, formatDuration, intFlag, parse, print, splitCommand, STORE_OPTION, storeUrl, timeLeft,
  UsageError, warn, whoText, type Command,
} from '../common.js'

const USAGE = `usage: baton run [options] <name> <command> [args…]
       baton run [options] <name> -c '<shell command>'
       baton run <name> [options] -- <command> [args…]`

const HELP = `${USAGE}

Holds the lock <name> while <command> runs, like flock(1) for one machine or
"consul lock" / "etcdctl lock" for a fleet. The lease is renewed while the
command runs and released when it exits.

Everything after the name is the command (baton run nightly ls -l /data), as
with flock; options then go before the name. With "--", options may also
follow the name, and the command is what comes after "--". -c runs a shell
command line with /bin/sh -c, for pipes and "&&".

The command gets BATON_LOCK (the name), BATON_TOKEN (the fencing token: pass it
to whatever the lock protects so it can refuse a stale holder) and
BATON_LEASE_EXPIRES (epoch ms the lease ran to when the command started; it is
renewed while the command runs).

options:
  -c, --command CMD        run CMD with /bin/sh -c (pipes, &&, globs)
  --ttl D                  lease length; renewed about every ttl/3 (default 30s)
  -w, --wait D             give up after waiting D (default: wait until granted)
  -n, --nonblock           give up at once if the lock is held
  -E, --conflict-exit-code N   exit code when the lock was not had (default 75);
                           with -E 0 the skip is quiet (nothing printed)
  --permits N              a semaphore: at most N commands at once
  --weight W               with --permits: this command takes W of the N permits
                           (default 1); the line is served in order, so a heavy
                           command waiting first is not passed by lighter ones
  --fair                   grant strictly in arrival order
  --read | --write         the shared or exclusive side of a read-write lock
  --kill-grace D           when the hold is lost: SIGTERM, then SIGKILL after D (default 5s)
  --lock-delay D           when this hold expires (not when released), nobody gets
                           the lock for D more: time for a stopped command to die.
                           Default: the kill grace, where the store has lock delay
                           (memory, redis, redlock, postgres, a baton server on them)
  --store URL              the store (default: BATON_URL); memory:// is refused
${DURATIONS_NOTE}

the command and the lock:
  It never runs without the lock: if the hold is lost (store unreachable, lease
  expired, release --force) it gets SIGTERM, then SIGKILL after --kill-grace,
  and baton run exits 70. If baton run itself is killed (even kill -9), a small
  guard process stops the command (SIGTERM, then SIGKILL after the kill grace
  or a third of the ttl, whichever is shorter) before the lease can run out.
  Without a terminal on stdin the command runs in a process group of its own,
  and signals reach the whole group.

exit status:
  the command's own code; 128+N when it died of signal N; 126/127 when it
  could not be started; 75 (or -E) when the lock was not had; 70 when the hold
  was lost while it ran (the command was stopped); 69 store unreachable;
  77 refused by the server's auth; 1 the name is in use as another kind of
  lock or with another --permits; 2 bad usage.
SIGINT, SIGTERM and SIGHUP are passed on to the command; the lock is released
once it has exited.

examples:
  export BATON_URL=redis://10.0.0.5:6379
  baton run nightly-report ./report.sh --full
  baton run --nonblock deploy/web ./deploy.sh            # skip if a deploy runs
  baton run -w 2m -E 0 migrations npm run migrate        # wait 2 min, quietly skip after
  baton run -w 10 backup -c 'pg_dump db | gzip > db.gz'  # wait 10 seconds; a shell line
  baton run --permits 4 gpu python train.py              # at most 4 at once
  baton run --permits 8 --weight 3 gpu python big.py     # takes 3 of the 8 permits
  baton run config --read -- ./read-config.sh`

const OPTIONS = {
  ...STORE_OPTION,
  'command': { type: 'string', short: 'c' },
  'ttl': { type: 'string' },
  'wait': { type: 'string', short: 'w' },
  'nonblock': { type: 'boolean', short: 'n' },
  'conflict-exit-code': { type: 'string', short: 'E' },
  'permits': { type: 'string' },
  'weight': { type: 'string' },
  'fair': { type: 'boolean' },
  'read': { type: 'boolean' },
  'write': { type: 'boolean' },
  'kill-grace': { type: 'string' },
  'lock-delay': { type: 'string' },
} as const

export const run: Command = {
  usage: USAGE,
  help: HELP,
  async main(args) {
    const { options: optionArgs, command: given } = splitCommand(args, OPTIONS)
    const parsed = parse(optionArgs, OPTIONS, { min: 0, max: 1, names: '' })
    if (!parsed) {
      print(HELP)
      return EXIT.ok
    }
    const { values, positionals } = parsed
    const name = positionals[0]
    if (name === undefined) throw new UsageError('missing the lock name: baton run <name> <command>')
    const shell = values.command !== undefined
    if (shell && given.length > 0) throw new UsageError(`-c takes the whole command as one argument; unexpected "${given[0]}" after it`)
    const command = shell ? [values.command!] : given
    if (command.length === 0 || command[0] === '') throw new UsageError(`missing the command to run after "${name}"`)
    if (values.read && values.write) throw new UsageError('--read and --write exclude each other')
    if (values.permits !== undefined && (values.read || values.write)) throw new UsageError('--permits is a semaphore; it does not go with --read or --write')
    if (values.nonblock && values.wait !== undefined) throw new UsageError('--nonblock and --wait exclude each other')
    const ttl = durationFlag(values.ttl ?? '30s', '--ttl')
    if (ttl < MIN_TTL_MS) throw new UsageError(`--ttl must be at least ${MIN_TTL_MS} ms so the lease can be renewed in time`)
    const waitMs = values.nonblock ? 0 : values.wait === undefined ? Infinity : durationFlag(values.wait, '--wait', true)
    const conflictCode = intFlag(values['conflict-exit-code'] ?? String(EXIT.conflict), '--conflict-exit-code', 0, 255)
    const permits = values.permits === undefined ? undefined : intFlag(values.permits, '--permits', 1, 1_000_000)
    if (values.weight !== undefined && permits === undefined) throw new UsageError('--weight is for a semaphore: give --permits too')
    const weight = values.weight === undefined ? 1 : intFlag(values.weight, '--weight', 1, permits!)
    const killGraceMs = durationFlag(values['kill-grace'] ?? '5s', '--kill-grace', true)
    const askedLockDelay = values['lock-delay'] === undefined ? undefined : durationFlag(values['lock-delay'], '--lock-delay', true)
    const fair = values.fair ?? false
    const url = storeUrl(values.store)
    const shown = shell ? command[0]! : command.join(' ')

    const baton = await connect(url, { clientName: 'baton run' })
    baton.keeper.description = describeProcess('baton run', shown)
    let released = false
    try {
      const supportsDelay = baton.driver.capabilities.lockDelay
      if (askedLockDelay && !supportsDelay) {
        warn(`baton run: the ${baton.store} store has no lock delay; --lock-delay is not applied`)
      }
      // Covers the kill grace: an expired hold's command may run that long after SIGTERM.
      const lockDelay = supportsDelay ? askedLockDelay ?? killGraceMs : 0
      const semaphore = permits !== undefined ? baton.semaphore(name, { permits, ttl, fair, lockDelay }) : undefined
      const handle: LockHandle = semaphore
        ? semaphore
        : values.read || values.write
          ? baton.rwlock(name, { ttl, fair, lockDelay })[values.read ? 'read' : 'write']()
          : baton.mutex(name, { ttl, fair, reentrant: false, lockDelay })

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
        const weighted = semaphore && weight > 1 ? { weight } : {}
        lease = waitMs === 0
          ? await (semaphore ?? handle).tryAcquire({ autoExtend: true, ...weighted })
          : await (semaphore ?? handle).acquire({ wait: waitMs, signal: waiting.signal, autoExtend: true, ...weighted })
      } catch (error) {
        if (caught && isBatonError(error, 'ABORTED')) return 128 + (constants.signals[caught] ?? 0)
        if (isBatonError(error, 'INVALID_ARGUMENT')) {
          // Not a flag mistake: the name is in use in another way (kind, permits). No usage text.
          warn(`baton run: ${error.message.replace(/^baton: /, '')}`)
          return EXIT.failure
        }
        if (!isBatonError(error, 'LOCK_TIMEOUT')) throw error
        lease = null
      } finally {
        for (const signal of FORWARDED_SIGNALS) process.off(signal, onSignal)
      }
      if (!lease) {
        // -E 0 is a quiet skip, as documented.
        if (conflictCode === 0) return conflictCode
        const view = await baton.inspect(name).catch(() => null)
        const how = waitMs === 0 ? 'with --nonblock' : `within ${formatDuration(waitMs)}`
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
        shell,
        guardGraceMs: Math.min(killGraceMs, Math.floor(ttl / 3)),
      })
      if (outcome.spawnError) warn(`baton run: ${outcome.spawnError}`)
      if (outcome.stoppedBy) {
        const reason = lease.signal.reason instanceof Error ? cliAdvice(lease.signal.reason.message.replace(/^baton: /, '')) : 'lost'
        warn(`baton run: ${reason}; stopped "${shown}" with ${outcome.stoppedBy} (exit ${outcome.exitCode})`)
        return EXIT.lost
      }
      try {
        await lease.release()
        released = true
      } catch (error) {
        // The command's result stands; the lease runs out by its ttl.
        warn(`baton run: could not release "${name}" (${error instanceof Error ? cliAdvice(error.message.replace(/^baton: /, '')) : String(error)}); it expires within ${formatDuration(ttl)}`)
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

/** "held by a.b [web-1 pid 42 baton run: ./deploy.sh] (exclusive, token 17, held 3m02s, 12.3s left); 2 waiting" */
export function describeHolders(view: LockView | null): string {
  if (!view || view.holders.length === 0) return 'it is taken (the holder could not be read)'
  const now = Date.now()
  const who = view.holders.map((h) => {
    const by = h.description ? ` [${whoText(h.description)}]` : ''
    const held = h.since !== undefined ? `, held ${age(h.since, now)}` : ''
    const weight = h.weight !== undefined && h.weight > 1 ? ` × ${h.weight}` : ''
    return `${h.owner}${by} (${h.mode}${weight}, token ${h.token}${held}, ${timeLeft(h.expiresAt, now)} left)`
  })
  const waiting = view.waiters.length ? `; ${view.waiters.length} waiting` : ''
  const used = view.holders.reduce((sum, h) => sum + (h.weight ?? 1), 0)
  const head = view.kind !== 'semaphore' ? 'held by '
    : used >= view.permits ? `all ${view.permits} permits are held by ` : `${used} of ${view.permits} permits are held by `
  return `${head}${who.join(', ')}${waiting}`
}
