/**
 * A turn's script calls on one Redis go as one EVALSHA of batch.lua
 * (src/drivers/redis/scripts.ts, ScriptBatch): each call still gets its
 * own reply or error, in order, and what it does in the store is what it
 * does alone. Real redis-server; the driver is driven directly so that the
 * calls of one turn are exactly the ones the test issues.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Redis } from 'ioredis'
import type { Driver } from '../../src/core/driver.js'
import { BatonError } from '../../src/core/errors.js'
import { parseStoreUrl } from '../../src/core/url.js'
import { createRedisDriver } from '../../src/drivers/redis/index.js'
import { startProxy } from '../harness/proxy.js'
import { attemptOf as request, driverOnRedis, type DriverOnRedis } from '../harness/redis-driver.js'
import { startRedis, stopAll } from '../harness/servers.js'

let fixture: DriverOnRedis
let raw: Redis
let driver: Driver
let counter = 0
const fresh = (label: string): string => `batch/${label}/${++counter}`

before(async () => {
  fixture = await driverOnRedis('batchtest')
  ;({ raw, driver } = fixture)
})
after(async () => {
  await fixture.close()
  await stopAll()
})

/**
 * Script runs Redis did so far, EVALSHA and EVAL (after a NOSCRIPT: a script
 * Redis did not have yet), without the failed ones (INFO commandstats).
 */
async function scriptCalls(): Promise<number> {
  const lines = (await raw.info('commandstats')).split('\n').filter((l) => /^cmdstat_(evalsha|eval):/.test(l))
  return lines.reduce((sum, line) => sum + Number(/calls=(\d+)/.exec(line)?.[1] ?? 0) - Number(/failed_calls=(\d+)/.exec(line)?.[1] ?? 0), 0)
}

describe('redis: the script calls of one turn', () => {
  it('go as few EVALSHAs (the first at once, the rest by 16), each answered its own grant', async () => {
    // 1 alone, then 16 together, then the last 3 at the end of the turn.
    const names = Array.from({ length: 20 }, () => fresh('many'))
    const before = await scriptCalls()
    const results = await Promise.all(names.map((name, i) => driver.acquire(request(name, `batchtest.o${i}`))))
    assert.equal(await scriptCalls() - before, 3)
    assert.ok(results.every((r) => r.status === 'granted'), JSON.stringify(results, (_, v) => (typeof v === 'bigint' ? String(v) : v)))
    // Each call did its own: every name is held by its own owner.
    for (const [i, name] of names.entries()) {
      const info = await driver.inspect(name)
      assert.deepEqual(info?.holders.map((h) => h.owner), [`batchtest.o${i}`])
    }
  })

  it('run in the order they were made: a release then an acquire of the same name in one turn hands it over', async () => {
    const name = fresh('order')
    const first = await driver.acquire(request(name, 'batchtest.first'))
    assert.equal(first.status, 'granted')
    const hold = { ...request(name, 'batchtest.first'), token: (first as { token: bigint }).token }
    // The first call of the turn goes alone; these two go together, in this order.
    const [, released, second] = await Promise.all([
      driver.inspect(fresh('other')),
      driver.release(hold),
      driver.acquire(request(name, 'batchtest.second')),
    ])
    assert.equal(released, true)
    assert.equal(second.status, 'granted')
    assert.ok((second as { token: bigint }).token > (first as { token: bigint }).token, 'the later grant has the larger token')
  })

  it('after Redis lost its scripts (SCRIPT FLUSH), a lone call and a batch run once each, by EVAL, in order', async () => {
    const name = fresh('flushed')
    const first = await driver.acquire(request(name, 'batchtest.first'))
    assert.equal(first.status, 'granted')
    const hold = { ...request(name, 'batchtest.first'), token: (first as { token: bigint }).token }
    await raw.script('FLUSH')
    const evalsBefore = Number(/cmdstat_eval:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0)
    // A lone call (NOSCRIPT, then its own script by EVAL), then a batch of two (NOSCRIPT, then batch.lua by EVAL).
    const lone = await driver.inspect(fresh('other'))
    assert.ok(!lone, 'nobody holds a fresh name')
    const [, released, second] = await Promise.all([
      driver.inspect(fresh('other')),
      driver.release(hold),
      driver.acquire(request(name, 'batchtest.second')),
    ])
    assert.equal(released, true)
    assert.equal(second.status, 'granted', 'the release ran before the acquire')
    const evals = Number(/cmdstat_eval:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0) - evalsBefore
    // The lone inspect loaded its script again; the batch loaded batch.lua: two EVALs.
    assert.equal(evals, 2)
    assert.deepEqual((await driver.inspect(name))?.holders.map((h) => h.owner), ['batchtest.second'])
  })

  it('after SCRIPT FLUSH, a release then an acquire by the same owner in one turn: the acquire waits for the release', async () => {
    // Redis runs the release (answered NOSCRIPT, sent again) after the acquire
    // unless the acquire waits: the owner would get its own hold back, which
    // the release then ends (a lease on a free name).
    // A client that has sent only lone calls: batch.lua is not on its connection yet.
    const own = await createRedisDriver(parseStoreUrl(fixture.server.url), {
      clientId: 'batchowner', connectTimeoutMs: 5000, commandTimeoutMs: 5000, fenceTtlMs: 3_600_000,
    })
    try {
      const warm = await own.acquire(request(fresh('warm'), 'batchowner.warm'))
      await own.release({ ...request(fresh('warm'), 'batchowner.warm'), token: (warm as { token: bigint }).token })
      const name = fresh('same-owner')
      const first = await own.acquire(request(name, 'batchowner.job'))
      assert.equal(first.status, 'granted')
      await raw.script('FLUSH')
      const [released, again] = await Promise.all([
        own.release({ ...request(name, 'batchowner.job'), token: (first as { token: bigint }).token }),
        own.acquire(request(name, 'batchowner.job')),
        own.acquire(request(fresh('other'), 'batchowner.other')),
      ])
      assert.equal(released, true)
      assert.equal(again.status, 'granted')
      assert.ok((again as { token: bigint }).token > (first as { token: bigint }).token, 'a new grant, not the released hold')
      assert.deepEqual((await own.inspect(name))?.holders.map((h) => h.owner), ['batchowner.job'])
      assert.equal((await own.acquire(request(name, 'batchowner.intruder'))).status, 'busy')
    } finally {
      await own.close()
    }
  })

  it('a release sent again after a reconnect to a restarted Redis (data kept, scripts lost) runs before an acquire made after it', async () => {
    const server = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] })
    const proxy = await startProxy(server.port)
    const own = await createRedisDriver(parseStoreUrl(`redis://127.0.0.1:${proxy.port}`), {
      clientId: 'batchrestart', connectTimeoutMs: 5000, commandTimeoutMs: 5000, fenceTtlMs: 3_600_000,
    })
    try {
      const name = fresh('restart')
      const first = await own.acquire(request(name, 'batchrestart.first'))
      assert.equal(first.status, 'granted')
      proxy.pause()
      const releasing = own.release({ ...request(name, 'batchrestart.first'), token: (first as { token: bigint }).token })
      await new Promise((resolve) => setTimeout(resolve, 50))
      await server.restart() // AOF: the hold survives; the script cache does not
      proxy.dropConnections() // the release never reached the old server: ioredis sends it again
      proxy.resume()
      // Made after the release, while the driver reconnects.
      const connection = (own as unknown as { connection: { status: string } }).connection
      for (let i = 0; i < 100 && connection.status === 'ready'; i++) await new Promise((resolve) => setTimeout(resolve, 1))
      const second = await own.acquire(request(name, 'batchrestart.second'))
      assert.equal(await releasing, true)
      assert.equal(second.status, 'granted', 'the release ran first')
      assert.deepEqual((await own.inspect(name))?.holders.map((h) => h.owner), ['batchrestart.second'])
    } finally {
      await own.close()
      await proxy.close()
    }
  })

  it('a call that fails fails alone: a name whose keys baton did not write, beside names that are fine', async () => {
    const bad = fresh('foreign')
    await raw.set(`baton:{${bad}}:x`, 'written by another program')
    const good = [fresh('fine'), fresh('fine')]
    const results = await Promise.allSettled([
      driver.acquire(request(good[0]!, 'batchtest.g0')),
      driver.acquire(request(bad, 'batchtest.bad')),
      driver.acquire(request(good[1]!, 'batchtest.g1')),
    ])
    assert.equal(results[0]!.status, 'fulfilled')
    assert.equal(results[2]!.status, 'fulfilled')
    assert.equal(results[1]!.status, 'rejected')
    const error = (results[1] as PromiseRejectedResult).reason as BatonError
    assert.ok(error instanceof BatonError && error.code === 'INVALID_ARGUMENT', String(error))
    assert.match(error.message, /hold a value baton did not write/)
    // The other program's value is untouched.
    assert.equal(await raw.get(`baton:{${bad}}:x`), 'written by another program')
  })
})
