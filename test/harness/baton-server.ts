/**
 * The real `baton serve` binary (dist/src/cli/bin.js) as a child process on a
 * free loopback port, managed like the other servers (stop, kill -9, pause,
 * restart with the same flags).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ManagedServer } from './servers.js'
import { ms } from './timing.js'

export const BIN = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url))

export interface BatonServer extends ManagedServer {
  readonly base: string
}

export async function startBatonServer(args: string[] = []): Promise<BatonServer> {
  const server = await ManagedServer.launch({
    label: 'baton serve',
    command: process.execPath,
    cwd: process.cwd(),
    args: (port) => [BIN, 'serve', '--port', String(port), ...args],
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
