/**
 * The real `baton serve` binary (dist/src/cli/bin.js) as a child process on a
 * free loopback port, managed like the other servers (stop, kill -9, pause,
 * restart with the same flags).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import type { PeerCertificate, TLSSocket } from 'node:tls'
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
export async function startBatonServer(args: string[] = [], options: { restartWait?: boolean; tls?: TlsClient } = {}): Promise<BatonServer> {
  const flags = options.restartWait ? args : ['--no-restart-wait', ...args]
  const tls = options.tls
  const server = await ManagedServer.launch({
    label: 'baton serve',
    command: process.execPath,
    cwd: process.cwd(),
    args: (port) => [BIN, 'serve', '--port', String(port), ...flags],
    probe: async (port) => {
      if (tls) return (await httpsGet(`https://127.0.0.1:${port}/healthz`, tls)).status === 200
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(ms(1000)) })
      return response.ok
    },
  })
  return Object.assign(server, { base: `${tls ? 'https' : 'http'}://127.0.0.1:${server.port}` }) as BatonServer
}

/** What a test's HTTPS client trusts and presents: PEM file paths. */
export interface TlsClient {
  readonly ca: string
  readonly cert?: string
  readonly key?: string
}

/** One GET over HTTPS trusting `tls.ca` (and presenting its client certificate): the status, and the server's certificate. */
export function httpsGet(url: string, tls: TlsClient, headers: Record<string, string> = {}): Promise<{ status: number; body: string; peer: PeerCertificate }> {
  return new Promise((resolve, reject) => {
    const request = https.get(url, {
      ca: readFileSync(tls.ca),
      ...(tls.cert && tls.key ? { cert: readFileSync(tls.cert), key: readFileSync(tls.key) } : {}),
      agent: false, // a new connection each time: it sees the certificate in force now
      headers,
      signal: AbortSignal.timeout(ms(5000)),
    }, (response) => {
      const peer = (response.socket as TLSSocket).getPeerCertificate()
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (body += chunk))
      response.once('end', () => resolve({ status: response.statusCode ?? 0, body, peer }))
      response.once('error', reject)
    })
    request.once('error', reject)
  })
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
