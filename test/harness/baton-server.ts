/**
 * The real `baton serve` binary (dist/src/cli/bin.js) as a child process on a
 * free loopback port, managed like the other servers (stop, kill -9, pause,
 * restart with the same flags).
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ManagedServer } from './servers.js'
import { ms } from './timing.js'

export const BIN = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url))

export interface BatonServer extends ManagedServer {
  readonly base: string
}

/**
 * `restartWait`: keep the server's rule that grants wait out the longest
 * lease after a start without --data-dir; by default tests pass
 * --no-restart-wait (each test's server is new: nothing can be held).
 */
export async function startBatonServer(args: string[] = [], options: { restartWait?: boolean } = {}): Promise<BatonServer> {
  const flags = options.restartWait ? args : ['--no-restart-wait', ...args]
  const server = await ManagedServer.launch({
    label: 'baton serve',
    command: process.execPath,
    cwd: process.cwd(),
    args: (port) => [BIN, 'serve', '--port', String(port), ...flags],
    probe: async (port) => {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(ms(1000)) })
      return response.ok
    },
  })
  return Object.assign(server, { base: `http://127.0.0.1:${server.port}` }) as BatonServer
}

export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `baton-${label}-`))
}

/** A `--tokens` file holding `entries` (the server's format), in a fresh temporary directory. */
export function tokensFile(entries: readonly unknown[]): string {
  const file = join(tempDir('tokens'), 'tokens.json')
  writeFileSync(file, JSON.stringify(entries))
  return file
}
