/**
 * The one-key hot path of the Redis driver (scripts/basics.lua): who holds
 * and waits is described (description, since by the store clock), a hold
 * written by the previous key layout is still a hold, and the hold key's
 * "nothing else exists" flag never lets a mutex past a line or shared holds.
 * Real redis-server; the driver is driven directly where the core would
 * hide what is checked.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Redis } from 'ioredis'
import { connect, type Baton } from '../../src/index.js'
import type { Driver } from '../../src/core/driver.js'
import { startRedlock } from '../harness/redlock.js'
import { attemptOf as request, driverOnRedis, type DriverOnRedis } from '../harness/redis-driver.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { sleep, withTimeout } from '../conformance/context.js'

let fixture: DriverOnRedis
let raw: Redis
let driver: Driver
let baton: Baton
let counter = 0
const fresh = (label: string): string => `layout/${label}/${++counter}`

before(async () => {
  fixture = await driverOnRedis('layouttest')
  ;({ raw, driver } = fixture)
  baton = await connect(fixture.server.url)
})
after(async () => {
  await fixture.close()
  await baton.close()
  await stopAll()
})

describe('redis: description and since', () => {
  it('inspect shows the description and the grant / queue time of holders and waiters', async () => {
    const name = fresh('described')
    const before = Date.now()
    const held = await driver.acquire(request(name, 'layouttest.a', { description: '{"host":"h1","pid":1}' }))
    assert.equal(held.status, 'granted')
    const waiting = await driver.acquire(request(name, 'layouttest.b', { enqueue: true, queueTtlMs: 10_000, description: 'b | with bars' }))
    assert.equal(waiting.status, 'busy')
    const info = await driver.inspect(name)
    assert.ok(info)
    assert.equal(info.holders[0]?.description, '{"host":"h1","pid":1}')
    assert.ok(Math.abs(info.holders[0]!.since! - before) < 60_000, `since ${info.holders[0]!.since} near ${before}`)
    assert.deepEqual(info.waiters.map((w) => [w.owner, w.description]), [['layouttest.b', 'b | with bars']])
    assert.ok(typeof info.waiters[0]!.since === 'number')
    await driver.release(request(name, 'layouttest.b'))
    await driver.release(request(name, 'layouttest.a'))
  })

  it('shared holders keep theirs too, and a hold sent without one has none', async () => {
    const name = fresh('shared')
    const reader = { kind: 'rwlock', mode: 'read' } as const
    assert.equal((await driver.acquire(request(name, 'layouttest.r1', { ...reader, description: 'r1' }))).status, 'granted')
    assert.equal((await driver.acquire(request(name, 'layouttest.r2', reader))).status, 'granted')
    const info = await driver.inspect(name)
    const byOwner = new Map(info!.holders.map((h) => [h.owner, h]))
    assert.equal(byOwner.get('layouttest.r1')?.description, 'r1')
    assert.equal(byOwner.get('layouttest.r2')?.description, undefined)
    assert.ok(typeof byOwner.get('layouttest.r2')?.since === 'number')
  })
})

describe('redis: the hold key', () => {
  it('a hold written by the previous layout (a bare member) is a hold: never a second holder', async () => {
    const name = fresh('old')
    await raw.set(`baton:{${name}}:x`, `oldclient.1|x|${Date.now() * 1000}|0`, 'PX', 10_000)
    const attempt = await driver.acquire(request(name, 'layouttest.c'))
    assert.equal(attempt.status, 'busy')
    assert.equal((await baton.inspect(name))?.holders[0]?.owner, 'oldclient.1')
  })

  it('a free key keeps the counter; its flag sends a mutex past neither a line nor shared holds', async () => {
    const name = fresh('flag')
    const first = await baton.mutex(name).acquire()
    await first.release()
    assert.match(String(await raw.get(`baton:{${name}}:x`)), /^\d+\|-$/)
    // Shared holds on the name: a mutex attempt is a conflict, not a grant.
    const sem = await baton.semaphore(name, { permits: 2 }).acquire()
    assert.match(String(await raw.get(`baton:{${name}}:x`)), /^\d+\|s$/)
    await assert.rejects(baton.mutex(name).acquire({ wait: 0 }), /in use as a semaphore/)
    await sem.release()
    // A waiter in line behind a holder: the holder's release hands over.
    const holder = await baton.mutex(name).acquire()
    const waiter = baton.mutex(name).acquire({ wait: 10_000 })
    while ((await baton.inspect(name))?.waiters.length !== 1) await new Promise((r) => setTimeout(r, 10))
    assert.match(String(await raw.get(`baton:{${name}}:x`)), /\|s\|/)
    await holder.release()
    const next = await waiter
    assert.ok(next.token > holder.token)
    await next.release()
    // Nobody left: back to the fast path's flag.
    assert.match(String(await raw.get(`baton:{${name}}:x`)), /^\d+\|-$/)
  })

  it('no hold key at all: a new name is granted at once, but not past a line or shared holds that outlived it', async () => {
    // Never used: granted, with a token of the clock floor (µs).
    const unused = fresh('missing/new')
    const granted = await driver.acquire(request(unused, 'layouttest.n'))
    assert.equal(granted.status, 'granted')
    assert.ok(granted.status === 'granted' && granted.token > BigInt(Date.now() - 60_000) * 1000n)
    // A fair line whose holder's hold expired (its key is gone, the line is not): a fair newcomer waits its turn.
    const lined = fresh('missing/line')
    assert.equal((await driver.acquire(request(lined, 'layouttest.h', { ttlMs: 200, fair: true }))).status, 'granted')
    assert.equal((await driver.acquire(request(lined, 'layouttest.w', { fair: true, enqueue: true, queueTtlMs: 10_000 }))).status, 'busy')
    while ((await raw.exists(`baton:{${lined}}:x`)) === 1) await new Promise((r) => setTimeout(r, 20))
    assert.equal((await driver.acquire(request(lined, 'layouttest.late', { fair: true }))).status, 'busy')
    // Readers hold; the hold key is gone (dropped here by hand): a writer is not let in beside them.
    const shared = fresh('missing/shared')
    const read = request(shared, 'layouttest.r', { kind: 'rwlock', mode: 'read' })
    assert.equal((await driver.acquire(read)).status, 'granted')
    await raw.del(`baton:{${shared}}:x`)
    assert.equal((await driver.acquire(request(shared, 'layouttest.wr', { kind: 'rwlock', mode: 'write' }))).status, 'busy')
  })
})

async function waitUntil(check: () => Promise<boolean>): Promise<void> {
  await withTimeout((async () => {
    while (!(await check())) await sleep(20)
  })(), ms(10_000), 'a condition')
}

describe('redis: listing', () => {
  it('a name whose hold key keeps only the counter is not listed (nor inspected)', async () => {
    const idle = fresh('list/idle')
    const held = fresh('list/held')
    await (await baton.mutex(idle).acquire()).release()
    const lease = await baton.mutex(held).acquire()
    const names = (await baton.list({ prefix: 'layout/' })).map((info) => info.name)
    assert.ok(names.includes(held), names.join(' '))
    assert.ok(!names.includes(idle), names.join(' '))
    await lease.release()
  })

  it('lists from the index of names in use: held, shared and waited-for names, not idle or expired ones; pages are stable', async () => {
    const root = fresh('index') + '/'
    const index = (): Promise<string[]> => raw.zrangebylex('baton:names', `[${root}`, `(${root}~`)
    const held = [`${root}a`, `${root}c`, `${root}e`, `${root}g`]
    const leases = await Promise.all(held.map((name) => baton.mutex(name).acquire()))
    const reader = await baton.rwlock(`${root}b`).read().acquire()
    const permit = await baton.semaphore(`${root}d`, { permits: 2 }).acquire()
    // Released: idle, its counter kept in the hold key, and out of the index at once.
    await (await baton.mutex(`${root}f`).acquire()).release()
    // A holder that died: a short hold taken by the driver alone (no renewal), never released.
    await driver.acquire(request(`${root}h`, 'layouttest.dead', { ttlMs: ms(100) }))
    assert.deepEqual(await index(), [`${root}a`, `${root}b`, `${root}c`, `${root}d`, `${root}e`, `${root}g`, `${root}h`])
    await waitUntil(async () => (await raw.exists(`baton:{${root}h}:x`)) === 0)

    const want = [`${root}a`, `${root}b`, `${root}c`, `${root}d`, `${root}e`, `${root}g`]
    assert.deepEqual((await baton.list({ prefix: root })).map((info) => info.name), want)
    // The expired name was found idle and dropped from the index on the way.
    assert.equal(await raw.zscore('baton:names', `${root}h`), null)
    // Pages of 2 from the cursor give the same names, once each, in order.
    const paged: string[] = []
    for (let after: string | undefined; ;) {
      const page = await baton.list({ prefix: root, limit: 2, ...(after === undefined ? {} : { after }) })
      if (page.length === 0) break
      paged.push(...page.map((info) => info.name))
      after = page.at(-1)!.name
    }
    assert.deepEqual(paged, want)
    // A waiter keeps a name listed while it is held; released all, nothing is left in the index.
    const waiting = baton.mutex(`${root}a`).acquire({ wait: ms(10_000) })
    await waitUntil(async () => (await baton.inspect(`${root}a`))?.waiters.length === 1)
    for (const lease of [...leases, reader, permit]) await lease.release()
    await (await waiting).release()
    assert.deepEqual(await index(), [])
    assert.deepEqual(await baton.list({ prefix: root }), [])
  })
})

describe('redlock: description and since', () => {
  it('inspect shows what the majority of nodes keep for a holder', async () => {
    const nodes = await startRedlock(3)
    const client = await connect(nodes.url)
    try {
      const name = fresh('redlock')
      const granted = await client.driver.acquire(request(name, 'redlocktest.a', { description: 'from redlock' }))
      assert.equal(granted.status, 'granted')
      const info = await client.driver.inspect(name)
      assert.equal(info?.holders[0]?.description, 'from redlock')
      assert.ok(typeof info?.holders[0]?.since === 'number')
    } finally {
      await client.close()
      await nodes.stop()
    }
  })
})
