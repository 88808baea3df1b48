/**
 * Two servers in front of one Redis: a lease id from one is good on the
 * other (servers are stateless), and the http:// driver works through both.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { call, lockPath } from './client.js'
import { releasedThroughOther } from './released-elsewhere.js'

let redis: RedisServer
let one: BatonServer
let two: BatonServer

before(async () => {
  redis = await startRedis()
  ;[one, two] = await Promise.all([startBatonServer(['--store', redis.url]), startBatonServer(['--store', redis.url])])
})
after(async () => {
  await Promise.all([one?.stop(), two?.stop()])
  await redis?.stop()
})

describe('two servers sharing a Redis store', () => {
  it('acquire on one, inspect, extend and release on the other', async () => {
    const name = `shared/${Date.now()}`
    const lease = await call(one.base, 'POST', lockPath(name, '/acquire'), { ttl: '10s' })
    assert.equal(lease.status, 200)
    assert.equal((await call(two.base, 'POST', lockPath(name, '/acquire'), {})).status, 409)
    assert.equal((await call(two.base, 'GET', lockPath(name))).body.holders[0].owner, lease.body.owner)
    const extended = await call(two.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, { ttl: '20s' })
    assert.equal(extended.status, 200)
    assert.equal(extended.body.ttlMs, 20_000)
    const batch = await call(two.base, 'POST', '/v1/leases/extend', { leases: [lease.body.leaseId] })
    assert.equal(batch.body.results[0].status, 'extended')
    assert.deepEqual((await call(two.base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body, { released: true })
    assert.equal((await call(one.base, 'GET', lockPath(name))).status, 404)
    assert.equal((await call(one.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`)).status, 410)
  })

  it('a waiter on one server is woken by a release on the other', async () => {
    const name = `shared-wait/${Date.now()}`
    const held = await call(one.base, 'POST', lockPath(name, '/acquire'), {})
    const waiting = call(two.base, 'POST', lockPath(name, '/acquire'), { wait: '30s' })
    for (;;) {
      if ((await call(one.base, 'GET', lockPath(name))).body.waiters?.length === 1) break
      await new Promise((r) => setTimeout(r, 20))
    }
    await call(two.base, 'DELETE', `/v1/leases/${held.body.leaseId}`)
    const next = await waiting
    assert.equal(next.status, 200)
    assert.ok(BigInt(next.body.token) > BigInt(held.body.token))
    await call(one.base, 'DELETE', `/v1/leases/${next.body.leaseId}`)
  })

  it('library clients on http:// through different servers exclude each other', async () => {
    const [a, b] = [await connect(one.base), await connect(two.base)]
    const name = `shared-lib/${Date.now()}`
    let inside = 0
    let overlaps = 0
    await Promise.all([a, b, a, b].map(async (client) => {
      for (let i = 0; i < 10; i++) {
        await client.mutex(name, { ttl: '5s' }).using(async () => {
          if (++inside > 1) overlaps++
          await new Promise((r) => setImmediate(r))
          inside--
        })
      }
    }))
    assert.equal(overlaps, 0)
    await Promise.all([a.close(), b.close()])
  })

  it('a lease released through the other server is reported by its own server as a release, at once', async () => {
    await releasedThroughOther(one.base, two.base, 'release')
  })

  it('a lease forced through the other server is reported by its own server as lost, at once', async () => {
    await releasedThroughOther(one.base, two.base, 'force')
  })
})
