/**
 * The dashboard as an operator's tool (issue 17), in real headless Chromium
 * against a real `baton serve` with no tokens, on its embedded store (which
 * keeps who holds and who waits): waiters under their lock, held since, the
 * substring filter, contended only, sorting, forced releases in the events
 * panel with who did it, the chart's history from the server, readable tokens
 * and time left, no admin-token prompt, no 404 after a release, x-axis labels
 * apart, and a clear disconnected state. Leaves a screenshot in
 * dist/artifacts/dashboard-operator.png (docs/dashboard.png is a copy of it).
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { launchChromium, type Browser } from '../harness/browser.js'
import { ms } from '../harness/timing.js'

const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url))

let server: BatonServer
let browser: Browser
let page: Page
const notFound: string[] = []
const consoleErrors: string[] = []

interface Grant { leaseId: string; token: string; owner: string }

async function acquire(name: string, body: Record<string, unknown> = {}): Promise<Grant> {
  const res = await fetch(`${server.base}/v1/locks/${encodeURIComponent(name)}/acquire`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ttl: '10m', ...body }),
  })
  assert.equal(res.status, 200, await res.clone().text())
  return (await res.json()) as Grant
}

async function release(grant: Grant): Promise<void> {
  const res = await fetch(`${server.base}/v1/leases/${encodeURIComponent(grant.leaseId)}`, { method: 'DELETE' })
  assert.equal(res.status, 200, await res.clone().text())
}

/** An acquire that waits in line (its request stays open until granted). */
function queue(name: string, more: Record<string, unknown> = {}): Promise<Grant | null> {
  // Still waiting when the server stops at the end: that ends it, as expected.
  return acquire(name, { wait: '5m', ...more }).catch(() => null)
}

/** Until the server shows `count` waiters on `name`. */
async function waitersOn(name: string, count: number): Promise<void> {
  const deadline = Date.now() + ms(10_000)
  for (;;) {
    const res = await fetch(`${server.base}/v1/locks/${encodeURIComponent(name)}`)
    const view = res.ok ? (await res.json()) as { waiters: unknown[] } : { waiters: [] }
    if (view.waiters.length >= count) return
    if (Date.now() > deadline) throw new Error(`${name}: ${count} waiters not seen`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const rowNames = () => page.evaluate(() => [...(globalThis as any).document.querySelectorAll('#locks tbody tr')].map((r: any) => r.dataset.name))

const held: Grant[] = []
const lines: Promise<Grant | null>[] = []

before(async () => {
  // Long leases (10m) so nothing expires while the page is looked at: above the default --max-ttl.
  server = await startBatonServer(['--max-ttl', '1h'])
  // Grants before the page opens: the chart must show them (the server's own history).
  for (let i = 0; i < 5; i++) await release(await acquire('ops/warm-up'))
  held.push(await acquire('ops/deploy/web'), await acquire('batch/job-7'), await acquire('batch/job-70'), await acquire('ops/quiet'))
  held.push(await acquire('ops/gpu', { mode: 'permit', permits: 2 }), await acquire('ops/gpu', { mode: 'permit', permits: 2 }))
  lines.push(queue('ops/deploy/web'))
  await waitersOn('ops/deploy/web', 1)
  lines.push(queue('ops/deploy/web'))
  await waitersOn('ops/deploy/web', 2)
  lines.push(queue('batch/job-7'))
  await waitersOn('batch/job-7', 1)
  lines.push(queue('ops/gpu', { mode: 'permit', permits: 2 }))
  await waitersOn('ops/gpu', 1)

  browser = await launchChromium()
  page = await browser.context.newPage()
  page.on('response', (response) => {
    if (response.status() === 404) notFound.push(response.url())
  })
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  await page.goto(server.base)
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: ms(30_000) })
  await page.locator('#locks tr[data-name="ops/deploy/web"] ol.waiters li.waiter').nth(1).waitFor({ timeout: ms(30_000) })
})

after(async () => {
  await browser?.close()
  await server?.stop()
})

describe('dashboard for operators', () => {
  it('asks for no token on a server without tokens', async () => {
    assert.equal(await page.locator('#auth').isHidden(), true)
  })

  it('lists waiters under their lock (position, who, waiting since) and holders with held since and who', async () => {
    const web = page.locator('#locks tr[data-name="ops/deploy/web"]')
    const waiters = await web.locator('ol.waiters li.waiter').allInnerTexts()
    assert.equal(waiters.length, 2)
    assert.match(waiters[0]!, /^#1\s+exclusive\s+\S+\s+waiting (\d+h\d+m|(\d+m)?\d+s)\s+\S+ pid \d+/)
    assert.match(waiters[1]!, /^#2\s/)
    const holder = await web.locator('.holder').innerText()
    assert.match(holder, /held (\d+h\d+m|(\d+m)?\d+s)/) // minutes when the page came up slowly (a browser installed first)
    assert.match(holder, /pid \d+/)
  })

  it('shows time left as the command line does and long tokens shortened, whole on hover', async () => {
    await page.waitForFunction(() => /^\d+m\d\ds$/.test((globalThis as any).document.querySelector('#locks tr[data-name="ops/quiet"] .left')?.textContent ?? ''), undefined, { timeout: ms(15_000) })
    const token = page.locator('#locks tr[data-name="ops/quiet"] .token')
    assert.match(await token.getAttribute('title') ?? '', /^token \d+$/)
    // The embedded store's tokens are short; a 16-digit Redis token is shortened to its last 6 digits.
    assert.equal(await page.evaluate(() => (globalThis as any).batonDashboard.shortToken('1795523933678002')), '#…678002')
  })

  it('filters by any part of the name, shows the contended only, and sorts by waiters and by age', async () => {
    await page.locator('#prefix').fill('job-7')
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#locks tbody tr').length === 2)
    assert.deepEqual(await rowNames(), ['batch/job-7', 'batch/job-70'])
    await page.locator('#prefix').fill('')
    await page.locator('#contended').check()
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#locks tbody tr').length === 3)
    assert.deepEqual(await rowNames(), ['batch/job-7', 'ops/deploy/web', 'ops/gpu'])
    await page.locator('#sort').selectOption('waiters')
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#locks tbody tr')?.dataset.name === 'ops/deploy/web')
    await page.locator('#contended').uncheck()
    await page.locator('#sort').selectOption('age')
    // Rows that were filtered out learn their holders' "since" from a detail fetch after they show:
    // until it answers they sort last, so wait for the order to settle rather than read it at once.
    const oldestFirst = ['ops/deploy/web', 'batch/job-7', 'batch/job-70']
    await page.waitForFunction((want) => {
      const rows = [...(globalThis as any).document.querySelectorAll('#locks tbody tr')].slice(0, 3).map((r: any) => r.dataset.name)
      return rows.join('\n') === want.join('\n')
    }, oldestFirst, { timeout: ms(30_000) }).catch(() => undefined)
    assert.deepEqual((await rowNames()).slice(0, 3), oldestFirst, 'oldest hold first')
    await page.locator('#sort').selectOption('name')
  })

  it('draws the grants made before the page opened, from the server\'s history, with x labels apart', async () => {
    await page.waitForFunction(() => (globalThis as any).batonDashboard.chartGrants >= 5, undefined, { timeout: ms(15_000) })
    const labels = await page.evaluate(() => (globalThis as any).batonDashboard.xLabels()) as { left: number; right: number; text: string }[]
    assert.ok(labels.length >= 2, `labels: ${JSON.stringify(labels)}`)
    for (let i = 1; i < labels.length; i++) assert.ok(labels[i]!.left > labels[i - 1]!.right, `labels overlap: ${JSON.stringify(labels)}`)
  })

  it('force-releases without asking for a token, shows it in the events with who did it, with no 404', async () => {
    notFound.length = 0
    await page.locator('#locks tr[data-name="ops/quiet"] button.force').click()
    assert.equal(await page.locator('#force-token').isVisible(), false, 'no admin token asked for')
    assert.equal(await page.locator('#force-open').isVisible(), true)
    await page.locator('#force-go').click()
    await page.locator('#toast', { hasText: 'Released "ops/quiet"' }).waitFor({ timeout: ms(15_000) })
    await page.locator('#events li.forced', { hasText: 'ops/quiet' }).first().waitFor({ timeout: ms(15_000) })
    assert.match(await page.locator('#events li.forced').first().innerText(), /^\S+ forced ops\/quiet by open server · /)
    await page.locator('#locks tr[data-name="ops/quiet"]').waitFor({ state: 'detached', timeout: ms(15_000) })
    // A released lock and the detail fetches after it: no 404 anywhere.
    await release(held.shift()!)
    await page.locator('#locks tr[data-name="ops/deploy/web"] ol.waiters li.waiter').nth(1).waitFor({ state: 'detached', timeout: ms(15_000) })
    await new Promise((r) => setTimeout(r, ms(2500)))
    assert.deepEqual(notFound, [])
    assert.deepEqual(consoleErrors, [])
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: `${ARTIFACTS}dashboard-operator.png` })
  })

  it('says clearly when it is disconnected and stops the countdowns', async () => {
    await server.stop()
    await page.locator('#offline').waitFor({ timeout: ms(30_000) })
    assert.match(await page.locator('#offline').innerText(), /Disconnected from the server at/)
    assert.equal(await page.evaluate(() => (globalThis as any).document.body.hasAttribute('data-offline')), true)
    const left = page.locator('#locks tr[data-name="batch/job-70"] .left')
    const before = await left.innerText()
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(await left.innerText(), before, 'the countdown stopped')
  })
})
