import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants as fs, statSync } from 'node:fs'
import { constants } from 'node:os'
import { delimiter, join } from 'node:path'
import { isatty } from 'node:tty'

/** Signals `baton run` passes on to its command (SIGINT also reaches it from a terminal directly). */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

export interface ChildOptions {
  env: NodeJS.ProcessEnv
  /** Aborts when the hold is lost: the command is then stopped. */
  stop: AbortSignal
  /** After SIGTERM on loss, how long before SIGKILL. */
  killGraceMs: number
  /** `command[0]` is a shell command line, run by /bin/sh -c (flock -c). */
  shell?: boolean
  /**
   * If `baton run` itself dies (kill -9, a crash), its guard stops the
   * command: SIGTERM at once, SIGKILL this long after. Must end before the
   * lease can (the lease is no longer renewed once `baton run` is gone).
   */
  guardGraceMs: number
}

export interface ChildOutcome {
  /** What `baton run` exits with: the command's code, 128 + signal number, or 126/127 as a shell would. */
  exitCode: number
  /** The command was stopped because the hold was lost (and how). */
  stoppedBy?: 'SIGTERM' | 'SIGKILL'
  /** Why the command could not start, when it could not. */
  spawnError?: string
}

/**
 * The guard: a tiny shell, in a session of its own (so no terminal signal
 * reaches it), whose stdin is a pipe from `baton run`. When `baton run`
 * ends normally it says so first; when it dies, the pipe's end reaches the
 * guard as end of file, and the guard stops the command. flock's command
 * keeps the lock through its inherited descriptor; ours has no such thing,
 * so it must not outlive the process that renews its lease.
 */
const GUARD_SCRIPT = `trap '' INT TERM HUP
if read -r _; then exit 0; fi
kill -s TERM -- "$1" 2>/dev/null || exit 0
sleep "$2"
kill -s KILL -- "$1" 2>/dev/null
exit 0`

/**
 * The command starts behind a gate: a shell that waits for "go" on fd 3 and
 * then execs the command (same pid, same exit status). `baton run` opens the
 * gate once the guard runs, so there is no moment when the command runs
 * unguarded; if `baton run` dies before, fd 3 ends and the command never starts.
 */
const GATE_SCRIPT = 'read -r _ <&3 || exit 125; exec 3<&-; exec "$@"'

/** `file` found on PATH (or as given, when it has a slash), or why it cannot run: 127 not found, 126 not runnable. */
function resolveCommand(file: string, path: string | undefined): { path: string } | { exitCode: number; error: string } {
  const candidates = file.includes('/') ? [file] : (path ?? '/usr/bin:/bin').split(delimiter).map((dir) => join(dir || '.', file))
  let denied: string | undefined
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue
      accessSync(candidate, fs.X_OK)
      return { path: candidate }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') denied ??= candidate
    }
  }
  return denied
    ? { exitCode: 126, error: `cannot run "${file}": permission denied` }
    : { exitCode: 127, error: `cannot run "${file}": command not found` }
}

function startGuard(target: string, graceMs: number): ChildProcess | undefined {
  try {
    const guard = spawn('/bin/sh', ['-c', GUARD_SCRIPT, 'baton-run-guard', target, (graceMs / 1000).toFixed(3)], {
      stdio: ['pipe', 'ignore', 'ignore'], detached: true,
    })
    guard.on('error', () => {})
    guard.stdin!.on('error', () => {})
    guard.unref()
    return guard
  } catch {
    return undefined
  }
}

/**
 * Runs `command` with inherited stdio; forwards SIGINT/SIGTERM/SIGHUP to it;
 * when `stop` aborts, sends SIGTERM and, if it is still running after the
 * grace time, SIGKILL. Resolves when the command has exited.
 *
 * Without a terminal on stdin the command gets a process group of its own,
 * so stopping it stops everything it started (a shell's children too); with
 * one it stays in the terminal's foreground group, where it can read input.
 */
export function runChild(command: readonly string[], options: ChildOptions): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    // isatty(0), not process.stdin: opening stdin as a stream would make a shared pipe non-blocking for the command too.
    const ownGroup = !isatty(0)
    const [file, args] = options.shell ? ['/bin/sh', ['-c', command[0]!]] : [command[0]!, command.slice(1)]
    const found = resolveCommand(file, options.env.PATH)
    if (!('path' in found)) return resolve({ exitCode: found.exitCode, spawnError: found.error })
    const child = spawn('/bin/sh', ['-c', GATE_SCRIPT, file, found.path, ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'], env: options.env, detached: ownGroup,
    })
    const guard = child.pid === undefined ? undefined : startGuard(ownGroup ? `-${child.pid}` : String(child.pid), options.guardGraceMs)
    // The guard runs (spawn returns once it has started): open the gate.
    const gate = child.stdio[3] as NodeJS.WritableStream | null
    gate?.on('error', () => {})
    gate?.end('go\n')
    let stoppedBy: ChildOutcome['stoppedBy']
    let killTimer: NodeJS.Timeout | undefined
    const signal = (name: NodeJS.Signals) => {
      try {
        if (ownGroup && child.pid !== undefined) process.kill(-child.pid, name)
        else child.kill(name)
      } catch {
        // Already gone.
      }
    }
    const forward = (name: NodeJS.Signals) => signal(name)
    for (const name of FORWARDED_SIGNALS) process.on(name, forward)
    const onLoss = () => {
      stoppedBy = 'SIGTERM'
      signal('SIGTERM')
      killTimer = setTimeout(() => {
        stoppedBy = 'SIGKILL'
        signal('SIGKILL')
      }, options.killGraceMs)
    }
    if (options.stop.aborted) onLoss()
    else options.stop.addEventListener('abort', onLoss, { once: true })

    const finish = (outcome: ChildOutcome) => {
      // The command is done: the guard may go, without touching anything.
      guard?.stdin?.end('done\n')
      for (const name of FORWARDED_SIGNALS) process.off(name, forward)
      options.stop.removeEventListener('abort', onLoss)
      clearTimeout(killTimer)
      resolve(stoppedBy ? { ...outcome, stoppedBy } : outcome)
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      // Only spawn failures reach here before 'exit' (kill() errors are returned, not emitted).
      if (child.pid !== undefined) return
      const exitCode = error.code === 'ENOENT' ? 127 : 126
      finish({ exitCode, spawnError: `cannot run "${command[0]}": ${error.code === 'ENOENT' ? 'command not found' : error.message}` })
    })
    child.once('exit', (code, name) => {
      finish({ exitCode: code ?? 128 + (name ? constants.signals[name] ?? 0 : 0) })
    })
  })
}
