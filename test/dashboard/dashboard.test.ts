/**
 * The dashboard at `/` of a real `baton serve` (Redis store, bearer tokens),
 * in real headless Chromium: live rows from the events stream, the countdown,
 * 10,000 locks paged and filtered, forced release with and without an admin
 * token. Leaves a screenshot in dist/artifacts/dashboard.png.
 */
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { connect, type Baton } from '../../src/index.js'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { launchChromium, type Browser } from '../harness/browser.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { unhurried } from '../harness/clients.js'

const READER = 'reader-token-0123456789abcdef'
const LOCKER = 'locker-token-0123456789abcdef'
const ADMIN = 'admin-token-0123456789abcdefgh'
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url))
const BULK = 10_000

let redis: RedisServer
let server: BatonServer
let browser: Browser
let page: Page
let direct: Baton

interface Grant {
  leaseId: string
  token: string
  owner: string
}

async function call(method: string, path: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
}

async function acquire(name: string, ttl = '60s', more: Record<string, unknown> = {}): Promise<Grant> {
  const res = await call('POST', `/v1/locks/${encodeURIComponent(name)}/acquire`, LOCKER, { ttl, ...more })
  assert.equal(res.status, 200, await res.clone().text())
  return (await res.json()) as Grant
}

async function release(grant: Grant): Promise<void> {
  const res = await call('DELETE', `/v1/leases/${encodeURIComponent(grant.leaseId)}`, LOCKER)
  assert.equal(res.status, 200, await res.clone().text())
}

/** The bulk locks must outlive taking them all and paging through them, however slow the machine: none may lapse mid-test. */
const BULK_TTL_MS = ms(20 * 60_000)

const row = (name: string) => page.locator(`#locks tr[data-name="${name}"]`)

/**
 * The issue asks for changes on the page "within a second". Test files run in
 * parallel on a busy 2-core machine, so the wait is bounded generously (no
 * timing is asserted) and the delay seen is printed as a test diagnostic.
 */
const LIVE_WAIT_MS = ms(15_000)
async function seenWithin(t: TestContext, what: string, wait: Promise<void>): Promise<void> {
  const started = performance.now()
  await wait
  t.diagnostic(`${what}: ${Math.round(performance.now() - started)} ms`)
}

before(async () => {
  redis = await startRedis()
  const tokens = join(tempDir('dashboard'), 'tokens.json')
  writeFileSync(tokens, JSON.stringify([
    { token: READER, rights: ['read'] },
    { token: LOCKER, rights: ['lock'] },
    { token: ADMIN, rights: ['admin'], name: 'ops-admin' },
  ]))
  server = await startBatonServer(['--store', redis.url, '--tokens', tokens])
  direct = await connect(redis.url, unhurried())
  browser = await launchChromium()
  page = await browser.context.newPage()
  await page.goto(server.base)
  // The server wants a token: the page asks for one and keeps it in memory only.
  await page.locator('#auth-token').fill(READER)
  await page.locator('#auth button').click()
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: ms(30_000) })
})

after(async () => {
  await browser?.close()
  await direct?.close()
  await server?.stop()
  await redis?.stop()
})

describe('dashboard', () => {
  it('shows a lock acquired through the API within a second, with a moving countdown, and drops it on release', async (t) => {
    const grant = await acquire('dash/live', '30s')
    await seenWithin(t, 'row shown after the grant', row('dash/live').waitFor({ timeout: LIVE_WAIT_MS }))
    const holder = row('dash/live').locator('.holder')
    // Time left, mode, the token (a long one shortened to its last digits), the owner, then held since and who.
    assert.match(await holder.innerText(), new RegExp(`^\\S+\\s+exclusive\\s+#(…)?\\d+\\s+${grant.owner}(\\s+.*)?$`))
    assert.ok(grant.token.endsWith((await holder.locator('.token').innerText()).replace(/^#…?/, '')), 'the token, shortened')
    const left = holder.locator('.left')
    // The page's CSP forbids eval, so page functions are real functions (no DOM types here: `any`).
    await page.waitForFunction(() => /^\d+(\.\d)?s$/.test((globalThis as any).document.querySelector('#locks tr[data-name="dash/live"] .left')?.textContent ?? ''), undefined, { timeout: ms(15_000) })
    const first = await left.innerText()
    await page.waitForFunction((was) => (globalThis as any).document.querySelector('#locks tr[data-name="dash/live"] .left')?.textContent !== was, first, { timeout: ms(15_000) })
    const events = await page.locator('#events li.grant').allInnerTexts()
    assert.ok(events.some((e) => e.includes('grant dash/live')), `no grant event listed: ${events.join(' | ')}`)
    await release(grant)
    await seenWithin(t, 'row gone after the release', row('dash/live').waitFor({ state: 'detached', timeout: LIVE_WAIT_MS }))
    await page.locator('#events li.release', { hasText: 'dash/live' }).first().waitFor({ timeout: LIVE_WAIT_MS })
  })

  it('pages and filters 10,000 locks', async (t) => {
    const names = Array.from({ length: BULK }, (_, i) => `bulk/${String(i).padStart(5, '0')}`)
    for (let i = 0; i < names.length; i += 500) {
      await Promise.all(names.slice(i, i + 500).map((name) => direct.mutex(name, { ttl: BULK_TTL_MS }).acquire()))
    }
    await page.reload()
    await page.locator('#auth-token').fill(READER)
    await page.locator('#auth button').click()
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: ms(30_000) })
    await page.locator('#prefix').fill('bulk/')
    // Eleven pages of the server's list (each a SCAN of every name, then the
    // page's reads), slow when other test files load the machine.
    await page.waitForFunction(() => (globalThis as any).document.getElementById('page-info').textContent.includes('of 10,000'), undefined, { timeout: ms(180_000) })
    assert.match(await page.locator('#page-info').innerText(), /^1–50 of 10,000 · page 1\/200$/)
    assert.equal(await page.locator('#locks tbody tr').count(), 50)
    assert.equal(await page.locator('#locks tbody tr').first().getAttribute('data-name'), 'bulk/00000')
    await page.locator('#next').click()
    // The next page is fetched after the click: wait for it before reading its first row.
    await page.waitForFunction(() => (globalThis as any).document.getElementById('page-info').textContent.startsWith('51–100'), undefined, { timeout: ms(30_000) })
    assert.equal(await page.locator('#locks tbody tr').first().getAttribute('data-name'), 'bulk/00050')
    await page.locator('#prefix').fill('bulk/0420')
    await page.waitForFunction(() => (globalThis as any).document.getElementById('page-info').textContent === '1–10 of 10 · page 1/1', undefined, { timeout: ms(30_000) })
    assert.deepEqual(await page.evaluate(() => [...(globalThis as any).document.querySelectorAll('#locks tbody tr')].map((r: any) => r.dataset.name)),
      Array.from({ length: 10 }, (_, i) => `bulk/0420${i}`))
    // The page stays live with 10,000 locks loaded.
    const grant = await acquire('bulk/04200x')
    await seenWithin(t, 'row shown with 10,000 locks loaded', row('bulk/04200x').waitFor({ timeout: LIVE_WAIT_MS }))
    await release(grant)
  })

  it('force-releases from the page with an admin token and is refused without one', async () => {
    const grant = await acquire('dash/victim')
    // Company for the screenshot: readers, semaphore permits, a holder with a waiter.
    const others = [
      await acquire('dash/config', '45s', { mode: 'read' }), await acquire('dash/config', '50s', { mode: 'read' }),
      await acquire('dash/gpu', '40s', { mode: 'permit', permits: 3 }), await acquire('dash/gpu', '55s', { mode: 'permit', permits: 3 }),
      await acquire('dash/report', '20s'),
    ]
    const waiter = acquire('dash/report', '20s', { wait: '60s' })
    await page.locator('#prefix').fill('dash/')
    await row('dash/victim').waitFor({ timeout: LIVE_WAIT_MS })
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#locks tr[data-name="dash/report"] td.waiting')?.textContent === '1', undefined, { timeout: ms(15_000) })
    await page.screenshot({ path: screenshotPath() })

    const force = async (token: string) => {
      await row('dash/victim').locator('button.force').click()
      await page.locator('#force-token').fill(token)
      await page.locator('#force-go').click()
      return page.locator('#toast')
    }
    let toast = await force(READER)
    await toast.filter({ hasText: 'Refused' }).waitFor({ timeout: ms(15_000) })
    toast = await force('')
    await toast.filter({ hasText: 'Refused' }).waitFor({ timeout: ms(15_000) })
    assert.equal(await page.locator('#force-token').inputValue(), '', 'the token is not kept in the form')
    assert.equal((await call('GET', '/v1/locks/dash%2Fvictim', READER)).status, 200, 'still held after the refusals')

    toast = await force(ADMIN)
    await toast.filter({ hasText: 'Released "dash/victim"' }).waitFor({ timeout: ms(15_000) })
    await row('dash/victim').waitFor({ state: 'detached', timeout: ms(15_000) })
    // Who forced it: the admin token's name from the tokens file, never the token.
    await page.locator('#events li.forced', { hasText: 'dash/victim' }).first().waitFor({ timeout: ms(15_000) })
    assert.match(await page.locator('#events li.forced').first().innerText(), /forced dash\/victim by ops-admin · /)
    const extend = await call('POST', `/v1/leases/${encodeURIComponent(grant.leaseId)}/extend`, LOCKER, {})
    assert.equal(extend.status, 410, 'the holder lost its lease')
    const stored = await page.evaluate(() => {
      const { localStorage, sessionStorage, document } = globalThis as any
      return JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie
    })
    assert.equal(stored, '{}{}', 'nothing is stored in the browser')
    for (const other of others) await release(other)
    await release(await waiter)
  })
})

function screenshotPath(): string {
  mkdirSync(ARTIFACTS, { recursive: true })
  return `${ARTIFACTS}dashboard.png`
}
