/** A downgrade answers the lease end the store keeps (it does not renew), on the embedded store and on Redis. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'

let redis: RedisServer
const servers: BatonServer[] = []

before(async () => {
  redis = await startRedis()
  servers.push(await startBatonServer([]), await startBatonServer(['--store', redis.url]))
})
after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
  await redis?.stop()
})

describe('downgrade', () => {
  for (const [i, label] of ['embedded memory store', 'Redis'].entries()) {
    it(`answers the existing lease end, not a fresh ttl (${label})`, async () => {
      const base = servers[i]!.base
      const ttlMs = ms(3000)
      const write = await call(base, 'POST', lockPath(`downgrade/${i}`, '/acquire'), { ttl: ttlMs, mode: 'write' })
      assert.equal(write.status, 200)
      await new Promise((r) => setTimeout(r, ms(1000)))
      const downgradeSentAt = Date.now()
      const read = await call(base, 'POST', `/v1/leases/${write.body.leaseId}/downgrade`)
      assert.equal(read.status, 200)
      assert.equal(read.body.mode, 'read')
      const held = (await call(base, 'GET', lockPath(`downgrade/${i}`))).body.holders[0]
      // The answer names the store's end (read once, never recomputed from a second clock read), not a fresh ttl
      // from now. 1 ms of slack: the memory store turns its monotonic deadline into wall time at each read.
      assert.ok(Math.abs(read.body.expiresAt - held.expiresAt) <= 1, `answered ${read.body.expiresAt}, the store holds ${held.expiresAt}`)
      // A fresh ttl would end no earlier than the downgrade was sent plus the ttl; the lease's own end came
      // ms(1000) before that. (Not against the acquire's answer: that counts from when the server asked the
      // store, the store from when it granted, later by a busy machine's round trip.)
      assert.ok(read.body.expiresAt < downgradeSentAt + ttlMs, `answered ${read.body.expiresAt}, a fresh ttl from the downgrade: ${downgradeSentAt + ttlMs}`)
      assert.ok(read.body.ttlMs < ttlMs)
    })
  }
})
