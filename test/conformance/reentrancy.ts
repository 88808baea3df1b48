import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { sleep, type SuiteContext } from './context.js'
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

    it('flows started side by side inside one scope take turns re-entering; code nested in a re-entry goes in at once', async () => {
      const client = await ctx.client()
      const name = ctx.name('reentrant-siblings')
      const lock = client.mutex(name)
      let inside = 0
      let most = 0
      await lock.using(async (outer) => {
        const turn = () => lock.using(async (mine) => {
          assert.equal(mine.token, outer.token)
          inside++
          most = Math.max(most, inside)
          const nested = await lock.acquire({ wait: ms(2000) })
          assert.equal(nested.token, outer.token, 'nested in this re-entry: in at once')
          await nested.release()
          await sleep(5)
          inside--
        })
        const fromTimer = new Promise<void>((resolve, reject) => setTimeout(() => turn().then(resolve, reject), 1))
        await Promise.all([turn(), turn(), turn(), fromTimer])
        assert.equal(most, 1, 'siblings were never inside together')

        // While a sibling is inside, this flow (not nested in it) finds the lock busy.
        let entered!: () => void
        let leave!: () => void
        const inSibling = new Promise<void>((resolve) => { entered = resolve })
        const gate = new Promise<void>((resolve) => { leave = resolve })
        const sibling = lock.using(async () => { entered(); await gate })
        await inSibling
        assert.equal(await lock.tryAcquire(), null)
        await assert.rejects(lock.acquire({ wait: 0 }), (e) => isBatonError(e, 'LOCK_TIMEOUT'))
        await assert.rejects(lock.acquire({ wait: ms(50) }), (e) => isBatonError(e, 'LOCK_TIMEOUT'))
        const waiting = lock.acquire({ wait: ms(5000) })
        leave()
        await sibling
        const after = await waiting
        assert.equal(after.token, outer.token, 'it re-enters once the sibling left')
        assert.equal((await client.inspect(name))?.holders[0]?.count, 2)
        await after.release()
      })
      assert.equal(await client.inspect(name), null)
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
