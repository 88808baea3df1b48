import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { aborted, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

export function lockDelay(ctx: SuiteContext): void {
  describe('lock delay', () => {
    it('blocks the name for lockDelay after an expiry, not after a release', async (t) => {
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      const name = ctx.name('lock-delay')
      const lock = client.mutex(name, { ttl: ms(200), lockDelay: ms(1500) })

      const released = await lock.acquire()
      await released.release()
      const right = await lock.tryAcquire()
      assert.ok(right, 'a release starts no delay')

      await aborted(right.signal) // expires
      await new Promise((r) => setTimeout(r, ms(100)))
      assert.equal(await lock.tryAcquire(), null, 'blocked during the lock delay')
      const later = await lock.acquire({ wait: ms(5000) })
      assert.ok(later.token > right.token)
      await later.release()
    })
  })
}
