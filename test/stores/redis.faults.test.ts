/**
 * Redis-only failure behaviour (why not in the conformance suite: these are
 * about one store's server going away, restarting empty, or failing over).
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { connect, isBatonError } from '../../src/index.js'
import { aborted } from '../conformance/context.js'
import { freePort } from '../harness/ports.js'
import { startRedis, startRedisSentinel, stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'

after(() => stopAll())

describe('redis faults', () => {
  it('an unreachable server gives a prompt BACKEND_UNAVAILABLE, not a hang', async () => {
    const port = await freePort()
    const error = await connect(`redis://127.0.0.1:${port}`, { connectTimeout: ms(1000) }).catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    assert.equal(error.retryable, true)
    assert.match(error.message, /127\.0\.0\.1/)
  })

  it('a frozen server makes acquire fail with BACKEND_UNAVAILABLE, never LOCK_TIMEOUT', async () => {
    const server = await startRedis()
    const baton = await connect(server.url, { commandTimeout: ms(300) })
    server.pause()
    try {
      const error = await baton.mutex('frozen').acquire({ wait: ms(5000) }).catch((e: unknown) => e)
      assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    } finally {
      server.resume()
    }
    const lease = await baton.mutex('frozen').acquire({ wait: ms(2000) })
    await lease.release()
    await baton.close()
  })

  it('a server restarted empty: the holder learns at its next renewal, and tokens still increase', async () => {
    const server = await startRedis()
    const [a, b] = [await connect(server.url), await connect(server.url)]
    const name = 'restart/orders'
    const before = await a.mutex(name, { ttl: ms(900) }).acquire({ autoExtend: true })
    await server.restart() // kill -9, then an empty server on the same port
    // Until that renewal, the old holder still believes it holds: fencing is
    // what protects the resource in that window.
    const reason = await aborted(before.signal, ms(10_000))
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
    const afterRestart = await b.mutex(name).acquire({ wait: ms(5000) })
    assert.ok(afterRestart.token > before.token, `${afterRestart.token} must exceed ${before.token}`)
    await afterRestart.release()
    await Promise.all([a.close(), b.close()])
  })

  it('tokens keep increasing when the counter went back (a replica promoted before it caught up)', async () => {
    const server = await startRedis()
    const baton = await connect(server.url)
    const lock = baton.mutex('lagging/counter')
    const first = await lock.acquire()
    await first.release()
    // What a promoted replica that missed the last increments looks like.
    const { Redis } = await import('ioredis')
    const raw = new Redis(server.port, '127.0.0.1')
    await raw.set('baton:{lagging/counter}:t', '5')
    // The counter kept in the free hold key (the layout since the one-key hot path).
    await raw.set('baton:{lagging/counter}:x', '5|-')
    raw.disconnect()
    const second = await lock.acquire()
    assert.ok(second.token > first.token, `${second.token} must exceed ${first.token}`)
    await second.release()
    await baton.close()
  })

  it('sentinel: after the master is killed, clients reach the promoted replica', async () => {
    const sentinel = await startRedisSentinel()
    const baton = await connect(sentinel.url, { commandTimeout: ms(1000) })
    const first = await baton.mutex('failover').acquire()
    await first.release()
    await sentinel.master.kill()
    // Failover takes a few seconds; retrying on BACKEND_UNAVAILABLE is the
    // documented way to ride it out.
    let lease
    for (let attempt = 0; !lease && attempt < 40; attempt++) {
      lease = await baton.mutex('failover').acquire({ wait: ms(1000) }).catch((e: unknown) => {
        if (!isBatonError(e) || !e.retryable) throw e
        return undefined
      })
      if (!lease) await new Promise((r) => setTimeout(r, ms(250)))
    }
    assert.ok(lease, 'a lock was granted after failover')
    await lease.release()
    await baton.close()
  })
})
