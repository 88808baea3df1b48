import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { backendUnavailable } from '../../src/core/errors.js'
import { aborted, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

export function ownership(ctx: SuiteContext): void {
  describe('owner-only release and extend', () => {
    it('a holder whose lease expired can neither release nor extend the next holder', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('owner')
      const stale = await a.mutex(name, { ttl: ms(200) }).acquire()
      await aborted(stale.signal)
      const current = await b.mutex(name, { ttl: '10s' }).acquire({ wait: ms(5000) })

      await stale.release() // harmless: it is no longer the holder
      await assert.rejects(stale.extend(), (e) => isBatonError(e, 'LEASE_LOST'))
      const view = await b.inspect(name)
      assert.equal(view?.holders.length, 1)
      assert.equal(view?.holders[0]?.owner, current.owner)
      assert.equal(current.held, true)
      await current.release()
    })

    it('the store refuses a release or extend with a forged owner', async () => {
      const client = await ctx.client()
      const name = ctx.name('owner-forged')
      const lease = await client.mutex(name).acquire()
      const spec = { name, kind: 'mutex', mode: 'exclusive', fair: false, permits: 1, lockDelayMs: 0 } as const
      const forged = { ...spec, owner: `${lease.owner}x`, token: lease.token }
      assert.equal(await client.driver.release(forged), false)
      assert.deepEqual(await client.driver.extend([forged], 60_000), [{ status: 'lost' }])
      assert.equal((await client.inspect(name))?.holders[0]?.owner, lease.owner)
      await lease.release()
    })

    it('double release is harmless, also after someone else took the lock', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('owner-double')
      const first = await a.mutex(name).acquire()
      await first.release()
      await first.release()
      const second = await b.mutex(name).acquire({ wait: ms(2000) })
      await first.release()
      assert.equal((await b.inspect(name))?.holders[0]?.owner, second.owner)
      await second.release()
      assert.equal(await b.inspect(name), null)
    })

    it('a release that failed for a transport reason is really tried again by the next release()', async () => {
      const client = await ctx.client()
      const name = ctx.name('owner-release-retry')
      const lease = await client.mutex(name).acquire()
      // The store is out of reach for exactly one call: the release never gets there.
      const release = client.driver.release.bind(client.driver)
      client.driver.release = async () => {
        client.driver.release = release
        throw backendUnavailable(client.driver.store, new Error('connection reset'))
      }
      await assert.rejects(lease.release(), (e) => isBatonError(e, 'BACKEND_UNAVAILABLE') && e.retryable)
      assert.equal((await client.inspect(name))?.holders[0]?.owner, lease.owner, 'still held in the store')
      await lease.release()
      assert.equal(await client.inspect(name), null, 'the second release reached the store')
      await lease.release()
    })

    it('extend() renews the lease and reports the new time left', async () => {
      const client = await ctx.client()
      const lease = await client.mutex(ctx.name('owner-extend'), { ttl: ms(1000) }).acquire()
      await lease.extend(ms(5000))
      assert.ok(lease.remainingMs() > ms(1000), `remaining ${lease.remainingMs()} ms after extending to 5 s`)
      assert.ok(lease.expiresAt > Date.now() + ms(1000))
      await lease.release()
      await assert.rejects(lease.extend(), (e) => isBatonError(e, 'NOT_HOLDER'))
    })
  })
}
