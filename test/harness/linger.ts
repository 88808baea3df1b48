/**
 * A test file whose process outlives its tests fails at once, naming what
 * keeps it alive, instead of at the runner's 300 s timeout far from the cause.
 *
 * scripts/test.mjs loads this module into every test file's process
 * (`node --import …/linger.js --test`). Once the file's tests are over (its
 * root `after` hooks run), a process should exit within moments: its servers
 * are stopped, its clients closed. If it is still running LINGER_GRACE_MS
 * later, something forgot to close — a client timer that outlives close(), a
 * child process nobody tracks — and the process prints what is still open
 * and exits 1, which fails the file. Each timer still pending is named with
 * its delay, its callback and the stack that made it (setTimeout and
 * setInterval are wrapped in test processes to keep that stack: an Error
 * made per timer, its text formatted only for the report); child processes,
 * sockets and servers by what they are.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { basename } from 'node:path'
import { after } from 'node:test'
import { promisify } from 'node:util'
import { ms } from './timing.js'

/** Long enough for any file's own `after` hooks (they run beside this one) to stop its servers; BATON_TEST_LINGER_MS sets it (for its own test). */
export const LINGER_GRACE_MS = process.env.BATON_TEST_LINGER_MS ? Number(process.env.BATON_TEST_LINGER_MS) : ms(15_000)

/** This process runs one test file for `node --test` (not a child that file started, which inherits the environment). */
const isTestFile = (process.env.NODE_TEST_CONTEXT ?? '').startsWith('child') && /\.test\.[cm]?js$/.test(process.argv[1] ?? '')

/** Pending timers and where each was made; fired and cleared ones are dropped now and then. */
const timers = new Map<NodeJS.Timeout, Error>()
const PRUNE_AT = 5000

function trackTimers(): void {
  const timersModule = createRequire(import.meta.url)('node:timers') as Record<string, unknown>
  for (const name of ['setTimeout', 'setInterval'] as const) {
    const original = globalThis[name] as (...args: unknown[]) => NodeJS.Timeout
    const wrapped = function (this: unknown, ...args: unknown[]): NodeJS.Timeout {
      const timer = original.apply(this, args)
      if (timers.size >= PRUNE_AT) for (const t of timers.keys()) if ((t as unknown as { _destroyed: boolean })._destroyed) timers.delete(t)
      timers.set(timer, new Error('made here'))
      return timer
    }
    const custom = (original as unknown as Record<symbol, unknown>)[promisify.custom]
    if (custom) Object.defineProperty(wrapped, promisify.custom, { value: custom })
    ;(globalThis as Record<string, unknown>)[name] = wrapped
    timersModule[name] = wrapped
  }
  syncBuiltinESMExports()
}

if (isTestFile) {
  trackTimers()
  after(watchForLingering)
}

function pendingTimers(): Array<[NodeJS.Timeout, Error]> {
  return [...timers].filter(([t]) => !(t as unknown as { _destroyed: boolean })._destroyed && t.hasRef())
}

function watchForLingering(): void {
  const endedAt = performance.now()
  setTimeout(() => {
    const file = basename(process.argv[1] ?? 'this file')
    const seconds = Math.round((performance.now() - endedAt) / 1000)
    const lines = [
      `${file}: still running ${seconds} s after its tests, kept alive by ${JSON.stringify(process.getActiveResourcesInfo())}:`,
      ...describeHandles(),
      ...pendingTimers().slice(0, 5).map(([timer, made]) => describeTimer(timer, made.stack ?? '')),
    ]
    process.stderr.write(`${lines.join('\n')}\n`)
    process.exit(1)
  }, LINGER_GRACE_MS).unref()
}

/** The open handles other than this process's own stdio, one line each. */
function describeHandles(): string[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles()
  const lines: string[] = []
  for (const handle of handles) {
    if (handle === process.stdout || handle === process.stderr || handle === process.stdin) continue
    const h = handle as Record<string, unknown> & { constructor?: { name?: string } }
    if (Array.isArray(h.spawnargs)) {
      lines.push(`  a child process, pid ${String(h.pid)}: ${(h.spawnargs as string[]).join(' ').slice(0, 200)}`)
    } else if (typeof h.remotePort === 'number') {
      lines.push(`  a socket to ${String(h.remoteAddress)}:${h.remotePort} (from port ${String(h.localPort)})`)
    } else if (typeof h.address === 'function' && typeof h.listening === 'boolean') {
      lines.push(`  a server listening on ${JSON.stringify((h.address as () => unknown).call(h))}`)
    } else {
      lines.push(`  a ${h.constructor?.name ?? typeof handle} (a pipe: a child's stdio, or a child's that exited while its own children kept the pipe open)`)
    }
  }
  return lines
}

function describeTimer(timer: NodeJS.Timeout, stack: string): string {
  const t = timer as unknown as { _idleTimeout: number; _repeat: number | null; _onTimeout: unknown }
  const kind = t._repeat ? `an interval of ${t._repeat} ms` : `a timer of ${t._idleTimeout} ms`
  const made = stack.split('\n').slice(2).filter((line) => !line.includes('node:internal') && !line.includes('linger.js')).slice(0, 4).map((l) => l.trim()).join(' < ')
  return `  ${kind}, made at ${made || '(no stack)'}: ${String(t._onTimeout).replace(/\s+/g, ' ').slice(0, 160)}`
}
