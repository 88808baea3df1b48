/**
 * A frozen (SIGSTOPped) `baton serve` and the http:// store: a waiting
 * acquire ends with LOCK_TIMEOUT at its own deadline, a late answer leaves no
 * ghost holder, and a release that failed can be retried and reaches the
 * server (issue 16, items 6 and 9).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { dropOnce, startProxy } from '../harness/proxy.js'
import { freePort } from '../harness/ports.js'
import { connect, isBatonError, type Mutex } from '../../src/index.js'
import { call, lockPath } from './client.js'

let server: BatonServer
before(async () => {
  server = await startBatonServer()
})
after(() => server.stop())

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(15_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** `promise`'s outcome, or 'pending' if it has not settled within `timeoutMs`. */
async function settledWithin<T>(promise: Promise<T>, timeoutMs: number): Promise<{ value?: T; error?: unknown } | 'pending'> {
  let timer: NodeJS.Timeout | undefined
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(resolve, timeoutMs, 'pending')))
  try {
    return await Promise.race([promise.then((value) => ({ value }), (error: unknown) => ({ error })), pending])
  } finally {
    clearTimeout(timer)
  }
}

describe('http:// against a frozen server', () => {
  it('acquire({ wait }) rejects with LOCK_TIMEOUT at its deadline; the late attempt leaves no holder', async () => {
    const client = await connect(server.base)
    const name = `frozen/wait/${Math.random().toString(36).slice(2)}`
    // The session and event stream are open, as for any client that has worked before.
    await (await client.mutex(`${name}/warm`).acquire({ autoExtend: true })).release()
    server.pause()
    let outcome
    try {
      outcome = await settledWithin(client.mutex(name, { ttl: ms(5000) }).acquire({ wait: ms(1000) }), ms(8000))
    } finally {
      server.resume()
    }
    assert.notEqual(outcome, 'pending', 'the acquire was still pending long after its wait')
    assert.ok(outcome !== 'pending' && isBatonError(outcome.error, 'LOCK_TIMEOUT'), `expected LOCK_TIMEOUT, got ${String(outcome !== 'pending' && (outcome.error ?? outcome.value))}`)
    // The attempt the server runs once it wakes up is undone: no ghost holder, nobody in line.
    await eventually('the late attempt undone', async () => (await call(server.base, 'GET', lockPath(name))).status === 404)
    await client.close()
  })

  it('a release that failed (BACKEND_UNAVAILABLE) can be retried and reaches the server', async () => {
    // Through a proxy that swallows the first DELETE: it never reaches the server.
    const proxy = await startProxy(server.port)
    const client = await connect(`http://127.0.0.1:${proxy.port}`, { commandTimeout: ms(500) })
    const name = `frozen/release/${Math.random().toString(36).slice(2)}`
    const lease = await client.mutex(name, { ttl: '60s' }).acquire()
    proxy.pause()
    let failed: unknown
    try {
      await lease.release()
    } catch (error) {
      failed = error
    } finally {
      proxy.dropConnections()
      proxy.resume()
    }
    assert.ok(isBatonError(failed, 'BACKEND_UNAVAILABLE'), `the release through a stalled network failed with ${String(failed)}`)
    assert.equal((await call(server.base, 'GET', lockPath(name))).status, 200, 'the first release never reached the server')
    await lease.release()
    assert.equal((await call(server.base, 'GET', lockPath(name))).status, 404, 'the retried release freed the lock')
    await client.close()
    await proxy.close()
  })

  for (const [how, attempt] of [
    ['a tryAcquire', (lock: Mutex) => lock.tryAcquire()],
    ['an acquire({ wait }) on a free name', (lock: Mutex) => lock.acquire({ wait: ms(2000) })],
  ] as const) {
    it(`${how} whose answer is lost with its connection leaves no holder: its request id undoes it`, async () => {
      const proxy = await startProxy(server.port)
      const client = await connect(`http://127.0.0.1:${proxy.port}`, { commandTimeout: ms(1000) })
      const name = `frozen/lost-grant/${Math.random().toString(36).slice(2)}`
      const dead = await freePort()
      // The grant's answer is dropped and its connection cut; the undo's first try finds nobody listening.
      proxy.onReply(dropOnce((chunk) => {
        if (!chunk.toString('latin1').includes('"leaseId"')) return false
        proxy.retarget(dead)
        return true
      }))
      let failed: unknown
      try {
        failed = await attempt(client.mutex(name, { ttl: ms(60_000) })).then(() => 'granted', (e: unknown) => e)
      } finally {
        proxy.onReply(undefined)
      }
      assert.ok(isBatonError(failed), `the attempt whose answer was lost failed, got ${String(failed)}`)
      assert.equal((await call(server.base, 'GET', lockPath(name))).status, 200, 'the server granted it')
      proxy.retarget(server.port)
      await eventually('the lost grant undone', async () => (await call(server.base, 'GET', lockPath(name))).status === 404)
      await client.close()
      await proxy.close()
    })
  }
})
