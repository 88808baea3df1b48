import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { aborted, nextEvent, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

export function loss(ctx: SuiteContext): void {
  describe('loss is visible', () => {
    it('lease.signal fires on expiry, before the store lets the lease go', async () => {
      const client = await ctx.client()
      const name = ctx.name('loss-expiry')
      const lease = await client.mutex(name, { ttl: ms(400) }).acquire()
      const lost = nextEvent<{ name: string }>('baton:lost', (m) => m.name === name)
      const reason = await aborted(lease.signal)
      // Fired while the monotonic clock still gave the lease time left.
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
      assert.match(reason.message, /ttl|renew/)
      await lost
      assert.equal(lease.held, false)
    })

    it('lease.signal fires when an admin forces the release', async () => {
      const [a, admin] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-force')
      await a.mutex(name).using(async (lease) => {
        assert.equal(await admin.forceRelease(name), true)
        const reason = await aborted(lease.signal, ms(5000))
        assert.ok(isBatonError(reason, 'LEASE_LOST'))
        assert.match(reason.message, /force/)
      })
      assert.equal(await admin.forceRelease(name), false)
    })

    it('the watchdog keeps a using() hold alive well past its ttl', async () => {
      const client = await ctx.client()
      const name = ctx.name('loss-watchdog')
      const renewals = nextEvent<{ name: string }>('baton:extend', (m) => m.name === name)
      await client.mutex(name, { ttl: ms(300) }).using(async (lease) => {
        await renewals
        await new Promise((r) => setTimeout(r, ms(900)))
        assert.equal(lease.signal.aborted, false)
        assert.equal((await client.inspect(name))?.holders[0]?.owner, lease.owner)
      })
      assert.equal(await client.inspect(name), null)
    })

    it('lease.signal fires while the store is frozen (SIGSTOP) past the ttl', async (t) => {
      const { pause, resume } = ctx.harness
      if (!pause || !resume) return t.skip('this store has no server process to freeze')
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-paused')
      const lease = await a.mutex(name, { ttl: ms(600) }).acquire({ autoExtend: true })
      pause.call(ctx.harness)
      try {
        const reason = await aborted(lease.signal, ms(5000))
        assert.ok(isBatonError(reason, 'LEASE_LOST'))
      } finally {
        resume.call(ctx.harness)
      }
      // The store let the lease go by its own clock: someone else can have it.
      const next = await b.mutex(name).acquire({ wait: ms(5000) })
      assert.ok(next.token > lease.token)
      await next.release()
    })
  })
}
