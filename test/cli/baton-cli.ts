/**
 * Runs the real `baton` binary in child processes, as a user's shell would,
 * and collects its output and exit status. The binary is the bundled bin the
 * package ships (dist/cli/baton.js, made by `npm run build`).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { ms } from '../harness/timing.js'

export const BATON_BIN = fileURLToPath(new URL('../../cli/baton.js', import.meta.url))

export interface Finished {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface Running {
  readonly process: ChildProcess
  /** Resolves with the first stdout line that contains `text`. */
  waitForOutput(text: string): Promise<void>
  finished: Promise<Finished>
}

/** Starts `baton ...args`; `env` adds to (or, with undefined values, removes from) the environment. */
export function startBaton(args: readonly string[], env: Record<string, string | undefined> = {}): Running {
  const child = spawn(process.execPath, [BATON_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  const watchers: { text: string; resolve: () => void }[] = []
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    for (const w of watchers.splice(0)) {
      if (stdout.includes(w.text)) w.resolve()
      else watchers.push(w)
    }
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => void (stderr += chunk))
  const finished = once(child, 'close').then(([code, signal]) => ({ code, signal, stdout, stderr }) as Finished)
  return {
    process: child,
    finished,
    waitForOutput: (text) =>
      new Promise<void>((resolve, reject) => {
        if (stdout.includes(text)) return resolve()
        const timer = setTimeout(() => reject(new Error(`baton ${args.join(' ')}: no "${text}" on stdout within ${ms(60000)} ms; stderr: ${stderr}`)), ms(60000))
        watchers.push({ text, resolve: () => (clearTimeout(timer), resolve()) })
        void finished.then(() => {
          clearTimeout(timer)
          if (!stdout.includes(text)) reject(new Error(`baton ${args.join(' ')} ended before printing "${text}"; stderr: ${stderr}`))
        })
      }),
  }
}

/** Runs `baton ...args` to the end. */
export function baton(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Finished> {
  return startBaton(args, env).finished
}

/**
 * A node one-liner as the command of `baton run`: prints "ready" once its
 * signal handlers are set, then runs `body`.
 */
export function nodeCommand(body: string): string[] {
  return [process.execPath, '-e', `${body}; console.log('ready')`]
}
