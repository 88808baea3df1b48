/**
 * Signalling a server process and its children, shared by the harnesses of
 * servers that fork (PostgreSQL's backends) or that tests pause and kill
 * (MariaDB): found through /proc, killed by pid, never by name.
 */
import { readdirSync, readFileSync } from 'node:fs'
import type { ChildProcess } from 'node:child_process'
import { ms } from './timing.js'

/** Signals the server and then its backends (children), found through /proc. */
export function signalTree(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid
  if (pid === undefined || child.exitCode !== null) return
  const pids = [pid, ...childrenOf(pid)]
  for (const target of signal === 'SIGCONT' ? pids.reverse() : pids) {
    try {
      process.kill(target, signal)
    } catch {
      // exited meanwhile
    }
  }
}

function childrenOf(parent: number): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === parent) found.push(Number(entry))
    } catch {
      // exited meanwhile
    }
  }
  return found
}

export async function killAndWait(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill(signal)
  let timer: NodeJS.Timeout | undefined
  const slow = new Promise<'slow'>((resolve) => (timer = setTimeout(() => resolve('slow'), ms(10_000))))
  if ((await Promise.race([exited, slow])) === 'slow') {
    signalTree(child, 'SIGKILL')
    await exited
  }
  clearTimeout(timer)
}

export function sleep(delay: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, delay))
}
