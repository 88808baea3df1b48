import { spawn } from 'node:child_process'
import { constants } from 'node:os'

/** Signals `baton run` passes on to its command (SIGINT also reaches it from a terminal directly). */
export const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

export interface ChildOptions {
  env: NodeJS.ProcessEnv
  /** Aborts when the hold is lost: the command is then stopped. */
  stop: AbortSignal
  /** After SIGTERM on loss, how long before SIGKILL. */
  killGraceMs: number
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
 * Runs `command` with inherited stdio; forwards SIGINT/SIGTERM/SIGHUP to it;
 * when `stop` aborts, sends SIGTERM and, if it is still running after the
 * grace time, SIGKILL. Resolves when the command has exited.
 */
export function runChild(command: readonly string[], options: ChildOptions): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: options.env })
    let stoppedBy: ChildOutcome['stoppedBy']
    let killTimer: NodeJS.Timeout | undefined
    const forward = (signal: NodeJS.Signals) => void child.kill(signal)
    for (const signal of FORWARDED_SIGNALS) process.on(signal, forward)
    const onLoss = () => {
      stoppedBy = 'SIGTERM'
      child.kill('SIGTERM')
      killTimer = setTimeout(() => {
        stoppedBy = 'SIGKILL'
        child.kill('SIGKILL')
      }, options.killGraceMs)
    }
    if (options.stop.aborted) onLoss()
    else options.stop.addEventListener('abort', onLoss, { once: true })

    const finish = (outcome: ChildOutcome) => {
      for (const signal of FORWARDED_SIGNALS) process.off(signal, forward)
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
    child.once('exit', (code, signal) => {
      finish({ exitCode: code ?? 128 + (signal ? constants.signals[signal] ?? 0 : 0) })
    })
  })
}
