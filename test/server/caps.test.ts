/**
 * Server caps on ttl and lock delay, the restart delay of --data-dir that
 * follows the leases that can still be live, and the restart rule of the
 * in-process store without --data-dir.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'

const servers: BatonServer[] = []
let redis: RedisServer | undefined
after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
  await redis?.stop()
})
const start = async (args: string[], options: { restartWait?: boolean } = {}) => {
  const server = await startBatonServer(args, options)
  servers.push(server)
  return server
}

describe('caps on ttl and lock delay', () => {
  it('default caps: 400 with a BatonError above them, on acquire and on extend', async () => {
    const { base } = await start([])
    const long = await call(base, 'POST', lockPath('caps/1', '/acquire'), { ttl: '24h' })
    assert.equal(long.status, 400)
    assert.equal(long.body.error.code, 'INVALID_ARGUMENT')
    assert.match(long.body.error.message, /--max-ttl/)
    const delay = await call(base, 'POST', lockPath('caps/1', '/acquire'), { lockDelay: 2 ** 31 - 1 })
    assert.equal(delay.status, 400)
    assert.match(delay.body.error.message, /--max-lock-delay/)
    const lease = await call(base, 'POST', lockPath('caps/1', '/acquire'), { ttl: '5m', lockDelay: '1m' })
    assert.equal(lease.status, 200)
    const extend = await call(base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, { ttl: '6m' })
    assert.equal(extend.status, 400)
    const batch = await call(base, 'POST', '/v1/leases/extend', { leases: [lease.body.leaseId], ttl: '1h' })
    assert.equal(batch.status, 400)
  })

  it('--max-ttl and --max-lock-delay set them', async () => {
    const { base } = await start(['--max-ttl', '10s', '--max-lock-delay', '0'])
    assert.equal((await call(base, 'POST', lockPath('caps/2', '/acquire'), { ttl: '11s' })).status, 400)
    assert.equal((await call(base, 'POST', lockPath('caps/2', '/acquire'), { ttl: 10_000, lockDelay: '1ms' })).status, 400)
    assert.equal((await call(base, 'POST', lockPath('caps/2', '/acquire'), { ttl: 10_000 })).status, 200)
  })
})

describe('restart delay', () => {
  it('--data-dir: a released lease no longer delays a restart (kill -9)', async () => {
    const dir = tempDir('data')
    const server = await start(['--data-dir', dir])
    const lease = await call(server.base, 'POST', lockPath('restart/long', '/acquire'), { ttl: '5m', lockDelay: '1m' })
    assert.equal(lease.status, 200)
    const state = () => JSON.parse(readFileSync(join(dir, 'baton-state.json'), 'utf8')) as { leasesEndBy: number }
    assert.ok(state().leasesEndBy > Date.now() + 5 * 60_000, 'the mark covers the lease before it is answered')
    assert.deepEqual((await call(server.base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body, { released: true })
    // Within a second or so the mark follows what can still be held: nothing.
    const deadline = Date.now() + ms(10_000)
    while (state().leasesEndBy > Date.now()) {
      assert.ok(Date.now() < deadline, 'the restart mark came down after the release')
      await new Promise((r) => setTimeout(r, 100))
    }
    await server.restart() // SIGKILL, then the same flags
    const again = await call(server.base, 'POST', lockPath('restart/other', '/acquire'), {})
    assert.equal(again.status, 200, JSON.stringify(again.body))
    assert.ok(BigInt(again.body.token) > BigInt(lease.body.token))
  })

  it('without any data directory the embedded store waits out the longest lease after a start, and says so', async () => {
    // No --data-dir, and the default state directory can not be made: the server can not know what is held.
    const before = process.env.BATON_STATE_DIR
    process.env.BATON_STATE_DIR = '/dev/null/baton-no-state' // a file's child: can not be made
    const server = await start(['--max-ttl', `${ms(2000)}ms`, '--max-lock-delay', `${ms(500)}ms`], { restartWait: true }).finally(() => {
      if (before === undefined) delete process.env.BATON_STATE_DIR
      else process.env.BATON_STATE_DIR = before
    })
    const refused = await call(server.base, 'POST', lockPath('restart/fresh', '/acquire'), {})
    assert.equal(refused.status, 503)
    assert.equal(refused.body.error.code, 'BACKEND_UNAVAILABLE')
    assert.match(refused.body.error.message, /--data-dir/)
    assert.ok(Number(refused.headers.get('retry-after')) >= 1)
    const ready = await call(server.base, 'GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.match(server.output(), /grants resume in \d+ s: without --data-dir/)
    // The wait covers a lease the previous run granted with the 30 s default ttl (granted whatever
    // --max-ttl said, before the default was clamped to it), plus the lock delay: not --max-ttl alone.
    const waitS = Number(/grants resume in (\d+) s/.exec(server.output())![1])
    assert.ok(waitS * 1000 >= 30_000 + ms(500), `waits ${waitS} s`)
    assert.ok(ready.body.retryAfterMs > ms(2000) + ms(500), `readyz says ${ready.body.retryAfterMs} ms`)
    const deadline = Date.now() + ms(60_000)
    while ((await call(server.base, 'GET', '/readyz')).status !== 200) {
      assert.ok(Date.now() < deadline, '/readyz turned ready')
      await new Promise((r) => setTimeout(r, 100))
    }
    assert.equal((await call(server.base, 'POST', lockPath('restart/fresh', '/acquire'), {})).status, 200)
  })

  it('a store that keeps its own state (Redis) does not wait', async () => {
    redis = await startRedis()
    const server = await start(['--store', redis.url], { restartWait: true })
    assert.equal((await call(server.base, 'POST', lockPath('restart/redis', '/acquire'), {})).status, 200)
  })
})
