import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nextEvent, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'

export function listing(ctx: SuiteContext): void {
  describe('inspect and list', () => {
    it('list() reports every kind in use under a prefix, with holders and the line', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      // A store may offer read-write locks but no semaphore (Redlock): list the kinds it offers.
      const semaphores = (await ctx.refuses('semaphore')) === undefined
      const [a, b] = [await ctx.client(), await ctx.client()]
      const prefix = ctx.name('list') + '/'
      const mutex = await a.mutex(`${prefix}m`).acquire()
      const read = await a.rwlock(`${prefix}rw`).read().acquire()
      const permit = semaphores ? await a.semaphore(`${prefix}s`, { permits: 3 }).acquire() : undefined
      const outside = await a.mutex(`${prefix.slice(0, -1)}-outside`).acquire()
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === `${prefix}m`)
      const waiter = b.mutex(`${prefix}m`).acquire()
      await queued

      const views = await b.list({ prefix })
      assert.deepEqual(views.map((v) => [v.name, v.kind]), [
        [`${prefix}m`, 'mutex'], [`${prefix}rw`, 'rwlock'], ...(semaphores ? [[`${prefix}s`, 'semaphore']] : []),
      ])
      const [m, rw, s] = views
      assert.equal(m?.holders[0]?.token, mutex.token)
      assert.equal(m?.waiters.length, 1)
      assert.equal(rw?.holders[0]?.mode, 'read')
      if (semaphores) assert.equal(s?.permits, 3)
      assert.ok(m!.holders[0]!.expiresAt > Date.now())

      await mutex.release()
      await (await waiter).release()
      await Promise.all([read.release(), permit?.release(), outside.release()])
      assert.deepEqual(await b.list({ prefix }), [])
    })

    it('await using releases at the end of the block', async () => {
      const client = await ctx.client()
      const name = ctx.name('dispose')
      {
        await using held = await client.mutex(name).acquire()
        assert.equal((await client.inspect(name))?.holders[0]?.owner, held.owner)
      }
      assert.equal(await client.inspect(name), null)
    })
  })
}
