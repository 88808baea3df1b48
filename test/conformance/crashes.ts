import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nextEvent, sleep, withTimeout, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'

export function crashes(ctx: SuiteContext): void {
  describe('crashed processes', () => {
    it('a holder killed with kill -9 is replaced by a waiter within its ttl', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const name = ctx.name('crash-holder')
      const ttl = ms(1000)
      const holder = ctx.worker({ task: 'hold', name, ttl })
      const heldToken = BigInt((await holder.line('held')).split(' ')[1]!)
      const lock = (await ctx.client()).mutex(name)
      holder.kill9()
      await holder.exited
      // The bound is the dead holder's ttl plus a margin for a busy machine.
      const lease = await lock.acquire({ wait: ttl + ms(2000) })
      assert.ok(lease.token > heldToken)
      await lease.release()
    })

    it('a leader killed with kill -9 is replaced by the next candidate within its ttl', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const refused = await ctx.refusesElections()
      if (refused) return t.skip(refused)
      const name = ctx.name('crash-leader')
      // Long enough that a store keeping a dead leader's lease 1.5 × its ttl
      // (as etcd and ZooKeeper did) overshoots the margin below.
      const ttl = ms(6000)
      const leader = ctx.worker({ task: 'campaign', name, ttl, value: 'doomed' })
      const leaderToken = BigInt((await leader.line('leader')).split(' ')[1]!)
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const next = (await ctx.client()).election(name, { ttl }).campaign({ value: 'next', wait: 4 * ttl })
      await queued
      leader.kill9()
      await leader.exited
      // The bound is the ttl (a store rounds it up to whole seconds) plus a margin for a busy machine.
      const term = await withTimeout(next, ttl + ms(2000), 'the next candidate leading')
      assert.ok(term.token > leaderToken)
      await term.resign()
    })

    it('a waiter stopped (SIGSTOP) while the lock is handed to it, past that hold\'s ttl, does not hold beside the next holder once resumed', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const client = await ctx.client()
      const name = ctx.name('stopped-waiter')
      const ttl = ms(1000)
      const holder = await client.mutex(name, { ttl: '30s' }).acquire()
      const stopped = ctx.worker({ task: 'wait', name, ttl })
      await stopped.line('waiting')
      stopped.child.kill('SIGSTOP')
      try {
        // Handed to the stopped waiter (where the store hands over), whose hold then runs out unrenewed.
        await holder.release()
        const next = await client.mutex(name, { ttl: '30s' }).acquire({ wait: ttl * 3 + ms(5000) })
        stopped.child.kill('SIGCONT')
        // Resumed: whatever it reads first (a hand-over waiting in the store or on its socket), it must not hold beside `next`.
        await sleep(ms(1500))
        assert.equal(stopped.printed('granted'), undefined, 'the resumed waiter says it holds while the next holder does')
        assert.equal(next.held, true)
        await next.release()
        // It then holds after `next`, with a greater token: its wait goes on
        // (a waiter whose lease or session ran out while it stood still joins
        // the line again), it never fails for having been paused.
        const granted = await Promise.race([stopped.line('granted'), stopped.exited.then(() => 'exited')])
        assert.notEqual(granted, 'exited', 'the resumed waiter\'s wait failed (its worker exited)')
        assert.ok(BigInt(granted.split(' ')[1]!) > next.token, 'its grant came after the next holder, with a greater token')
      } finally {
        stopped.child.kill('SIGCONT')
      }
    })

    it('a waiter killed in the line does not stall the next one beyond its ttl', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const client = await ctx.client()
      const name = ctx.name('crash-waiter')
      const ttl = ms(1000)
      const holder = await client.mutex(name).acquire()
      const doomed = ctx.worker({ task: 'wait', name, ttl })
      await doomed.line('waiting')
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const next = client.mutex(name).acquire({ wait: 2 * ttl + ms(3000) })
      await queued
      doomed.kill9()
      await doomed.exited
      await holder.release()
      const lease = await next
      assert.ok(lease.token > holder.token)
      await lease.release()
    })
  })
}
