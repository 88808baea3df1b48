import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

export function reentrancy(ctx: SuiteContext): void {
  describe('reentrancy', () => {
    it('a nested acquire in the same flow re-enters with a count', async () => {
      const client = await ctx.client()
      const name = ctx.name('reentrant')
      const lock = client.mutex(name)
      await lock.using(async (outer) => {
        const inner = await lock.acquire({ wait: ms(100) })
        assert.equal(inner.token, outer.token)
        assert.equal((await client.inspect(name))?.holders[0]?.count, 2)
        await inner.release()
        assert.equal(outer.held, true, 'releasing the inner handle keeps the hold')
        assert.equal((await client.inspect(name))?.holders[0]?.count, 1)
        await lock.using(async (again) => assert.equal(again.token, outer.token))
      })
      assert.equal(await client.inspect(name), null)
    })

    it('lease.run() opens a reentrant scope for a bare acquire()', async () => {
      const client = await ctx.client()
      const lock = client.mutex(ctx.name('reentrant-run'))
      const lease = await lock.acquire()
      await lease.run(async () => {
        const nested = await lock.tryAcquire()
        assert.equal(nested?.token, lease.token)
        await nested?.release()
      })
      await lease.release()
    })

    it('parallel flows of one client contend like separate clients', async () => {
      const client = await ctx.client()
      const lock = client.mutex(ctx.name('reentrant-parallel'))
      const spans: [number, number][] = []
      let clock = 0
      await Promise.all([0, 1, 2].map(() => lock.using(async () => {
        const start = ++clock
        await new Promise((r) => setTimeout(r, 20))
        spans.push([start, ++clock])
      })))
      spans.sort((x, y) => x[0] - y[0])
      for (let i = 1; i < spans.length; i++) assert.ok(spans[i]![0] > spans[i - 1]![1], `flows overlapped: ${JSON.stringify(spans)}`)
    })

    it('reentrant: false makes a nested acquire wait like anyone else', async () => {
      const client = await ctx.client()
      const lock = client.mutex(ctx.name('reentrant-off'), { reentrant: false })
      await lock.using(async () => {
        assert.equal(await lock.tryAcquire(), null)
      })
    })
  })
}
