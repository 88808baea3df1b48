/**
 * Headless Chromium (Debian's `chromium`, installed when missing) driven by
 * playwright-core: the dashboard tests and the dashboard benchmark share it.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { ensureCommand, findOnPath } from './install.js'
import { ms } from './timing.js'

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

export interface Browser {
  readonly context: BrowserContext
  /** The fresh --user-data-dir of this browser. */
  readonly profile: string
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
    profile,
    async close() {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
