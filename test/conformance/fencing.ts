import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { aborted, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

export function fencing(ctx: SuiteContext): void {
  describe('fencing tokens', () => {
    it('strictly increase across release, expiry, forced release and reentry', async () => {
      const client = await ctx.client()
      const name = ctx.name('fencing')
      const lock = client.mutex(name, { ttl: ms(300) })
      const tokens: bigint[] = []

      for (let i = 0; i < 3; i++) {
        const lease = await lock.acquire()
        tokens.push(lease.token)
        await lease.release()
      }

      const expiring = await lock.acquire()
      tokens.push(expiring.token)
      await aborted(expiring.signal) // expiry, no renewal
      const afterExpiry = await lock.acquire({ wait: ms(5000) })
      tokens.push(afterExpiry.token)

      await client.forceRelease(name)
      await aborted(afterExpiry.signal)
      const afterForce = await lock.acquire({ wait: ms(5000) })
      tokens.push(afterForce.token)
      await afterForce.release()

      await lock.using(async (outer) => {
        tokens.push(outer.token)
        await lock.using(async (inner) => {
          assert.equal(inner.token, outer.token, 'a reentrant hold is the same grant')
        })
      })
      const next = await lock.acquire()
      tokens.push(next.token)
      await next.release()

      for (let i = 1; i < tokens.length; i++) {
        assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i} (${tokens[i]}) must exceed ${tokens[i - 1]}`)
      }
      assert.equal(typeof tokens[0], 'bigint')
    })

    it('are reported by inspect() as the last token granted', async () => {
      const client = await ctx.client()
      const name = ctx.name('fencing-inspect')
      const lease = await client.mutex(name).acquire()
      const view = await client.inspect(name)
      assert.equal(view?.lastToken, lease.token)
      assert.equal(view?.holders[0]?.token, lease.token)
      await lease.release()
    })
  })
}
