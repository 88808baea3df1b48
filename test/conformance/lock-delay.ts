import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { aborted, sleep, type SuiteContext } from './context.js'
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
      assert.deepEqual((await client.inspect(name))?.holders ?? [], [], 'the expired hold\'s phantom holds nothing')
      const later = await lock.acquire({ wait: ms(5000) })
      assert.ok(later.token > right.token)
      await later.release()
    })

    it('a leader killed with kill -9 is no leader during its lock delay: leader() is null, and the next candidate leads after it', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      if (client.driver.electionRefusal !== undefined) return t.skip(client.driver.electionRefusal)
      const name = ctx.name('lock-delay-crashed-leader')
      // The delay well beyond the margin below: a store that names the dead leader for it fails.
      const ttl = ms(1000)
      const lockDelay = ms(6000)
      const leader = ctx.worker({ task: 'campaign', name, ttl, value: 'doomed', lockDelay })
      const leaderToken = BigInt((await leader.line('leader')).split(' ')[1]!)
      const election = client.election(name, { ttl, lockDelay })
      assert.equal((await election.leader())?.value, 'doomed')
      leader.kill9()
      await leader.exited
      // Gone once its ttl ran out (plus a margin for a busy machine), though its name is still blocked.
      const deadline = Date.now() + ttl + ms(2000)
      let named = await election.leader()
      while (named !== null && Date.now() < deadline) {
        await sleep(ms(50))
        named = await election.leader()
      }
      assert.equal(named, null, 'a crashed leader is no leader once its ttl ran out, during its lock delay as after it')
      const term = await election.campaign({ value: 'next', wait: lockDelay + ms(5000) })
      assert.ok(term.token > leaderToken)
      assert.equal((await election.leader())?.value, 'next')
      await term.resign()
    })

    it('forceRelease of a name only a lock-delay phantom blocks frees it and answers true', async (t) => {
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      const name = ctx.name('lock-delay-force')
      const lock = client.mutex(name, { ttl: ms(200), lockDelay: ms(10_000) })
      const expired = await lock.acquire()
      await aborted(expired.signal)
      await new Promise((r) => setTimeout(r, ms(300)))
      assert.equal(await lock.tryAcquire(), null, 'blocked during the lock delay')
      assert.equal(await client.forceRelease(name), true, 'it freed something that blocked the name')
      const next = await lock.acquire({ wait: ms(5000) })
      assert.ok(next.token > expired.token)
      await next.release()
    })

    it('an expired permit keeps only its own slot for lockDelay; the other permits stay usable', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      const name = ctx.name('lock-delay-permit')
      const slots = client.semaphore(name, { permits: 2, ttl: ms(200), lockDelay: ms(3000) })
      const expiring = await slots.acquire()
      await aborted(expiring.signal)
      await sleep(ms(100)) // past the store's expiry, well within the delay
      const other = await slots.tryAcquire()
      assert.ok(other, 'the free permit is usable during the delay')
      await other.extend('10s')
      assert.equal(await slots.tryAcquire(), null, 'the expired permit still takes its slot')
      const later = await slots.acquire({ wait: ms(8000) })
      assert.ok(later.token > other.token)
      await Promise.all([other.release(), later.release()])
    })

    it('an expired reader blocks writers for lockDelay, not other readers; an expired writer blocks both', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      const name = ctx.name('lock-delay-rw')
      const lock = client.rwlock(name, { ttl: ms(200), lockDelay: ms(3000) })
      const reader = await lock.read().acquire()
      await aborted(reader.signal)
      await sleep(ms(100))
      const another = await lock.read().tryAcquire()
      assert.ok(another, 'a reader joins during an expired reader\'s delay')
      await another.release()
      assert.equal(await lock.write().tryAcquire(), null, 'a writer waits out the delay')
      const writer = await lock.write().acquire({ wait: ms(8000) })
      assert.ok(writer.token > reader.token)
      await aborted(writer.signal)
      await sleep(ms(100))
      assert.equal(await lock.read().tryAcquire(), null, 'an expired writer blocks readers')
      assert.equal(await lock.write().tryAcquire(), null, 'and writers')
      const after = await lock.read().acquire({ wait: ms(8000) })
      await after.release()
    })
  })
}
