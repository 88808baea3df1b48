/**
 * Headless Chromium (Debian's `chromium`, installed when missing) driven by
 * playwright-core, and a real `baton serve` child process for it to load:
 * the dashboard tests and the dashboard benchmark share both.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext } from 'playwright-core'
import { ensureCommand, findOnPath } from './install.js'
import { freePort } from './ports.js'
import { ms } from './timing.js'

const BATON_BIN = fileURLToPath(new URL('../../src/cli/bin.js', import.meta.url))

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export interface Browser {
  readonly context: BrowserContext
  close(): Promise<void>
}

/** Chromium with a fresh profile directory, removed again by close(). */
export async function launchChromium(): Promise<Browser> {
  await ensureCommand('chromium', 'chromium')
  const executablePath = (await findOnPath('chromium'))!
  const profile = mkdtempSync(join(tmpdir(), 'baton-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath, headless: true, args: CHROMIUM_ARGS, timeout: ms(60_000), viewport: { width: 1400, height: 1000 },
  })
  return {
    context,
    async close() {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

export interface TokenEntry {
  token: string
  rights?: ('read' | 'lock' | 'admin')[]
  prefixes?: string[]
}

export interface BatonServer {
  /** 'http://127.0.0.1:PORT' */
  readonly url: string
  readonly process: ChildProcess
  stop(): Promise<void>
}

/** `baton serve` on a free loopback port in front of `store`, with `tokens` as its --tokens file when given. */
export async function startBatonServe(store: string, tokens?: TokenEntry[]): Promise<BatonServer> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'baton-serve-'))
  const args = [BATON_BIN, 'serve', '--store', store, '--host', '127.0.0.1', '--port', String(port)]
  if (tokens) {
    const file = join(dir, 'tokens.json')
    writeFileSync(file, JSON.stringify(tokens), { mode: 0o600 })
    args.push('--tokens', file)
  }
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), ms(5000))
      await exited
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + ms(20_000)
  for (;;) {
    if (child.exitCode !== null) throw new Error(`baton serve exited ${child.exitCode}: ${output}`)
    try {
      if ((await fetch(`${url}/healthz`)).ok) return { url, process: child, stop }
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`baton serve did not answer /healthz within ${ms(20_000)} ms: ${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}
