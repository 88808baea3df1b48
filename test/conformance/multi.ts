import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import type { AcquireEvent, WaitEvent } from '../../src/core/events.js'
import { compareNames } from '../../src/core/list.js'
import { ms } from '../harness/timing.js'
import { aborted, nextEvent, sleep, type SuiteContext } from './context.js'
import { multiLockFaults } from './multi-faults.js'

/** Several names as one lease: all or none, no deadlock, one signal. Core-only, so the same on every store; then under faults. */
export function multiLock(ctx: SuiteContext): void {
  describe('multi-lock', () => {
    it('takes every name with its own fencing token, and releases them all', async () => {
      const baton = await ctx.client()
      const names = [ctx.name('multi-c'), ctx.name('multi-a'), ctx.name('multi-b')]
      const lease = await baton.multi(names, { ttl: '10s' }).acquire({ wait: '5s' })
      assert.deepEqual([...lease.tokens.keys()].sort(), [...names].sort())
      assert.equal(lease.held, true)
      for (const name of names) assert.equal((await baton.inspect(name))?.holders[0]?.token, lease.tokens.get(name))
      await lease.release()
      for (const name of names) assert.equal((await baton.inspect(name))?.holders.length ?? 0, 0)
    })

    it('all or none: a timed-out or aborted acquire leaves none of its names held', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const [first, middle, last] = ['1', '2', '3'].map((n) => ctx.name(`multi-allnone-${n}`)) as [string, string, string]
      const blocker = await b.mutex(last, { ttl: '10s' }).acquire()
      await assert.rejects(a.multi([first, middle, last], { ttl: '10s' }).acquire({ wait: '300ms' }), (e: unknown) => isBatonError(e, 'LOCK_TIMEOUT'))
      const controller = new AbortController()
      const aborted = a.multi([first, middle, last], { ttl: '10s' }).acquire({ signal: controller.signal })
      await sleep(200)
      controller.abort()
      await assert.rejects(aborted, (e: unknown) => isBatonError(e, 'ABORTED'))
      assert.equal(await a.multi([first, middle, last]).tryAcquire(), null)
      for (const name of [first, middle]) assert.equal((await a.inspect(name))?.holders.length ?? 0, 0, `${name} is free`)
      await blocker.release()
      const lease = await a.multi([last, first, middle], { ttl: '10s' }).acquire({ wait: '5s' })
      await lease.release()
    })

    it('no deadlock: clients taking overlapping sets in opposite orders all finish', async () => {
      const clients = [await ctx.client(), await ctx.client()]
      const names = ['x', 'y', 'z'].map((n) => ctx.name(`multi-order-${n}`))
      let inside = 0
      let overlaps = 0
      await Promise.all(Array.from({ length: 6 }, async (_, flow) => {
        const set = flow % 2 === 0 ? names : [...names].reverse().slice(0, 2 + (flow % 2))
        const lock = clients[flow % 2]!.multi(set, { ttl: '10s' })
        for (let i = 0; i < 8; i++) {
          await lock.using(async () => {
            if (set.includes(names[1]!)) { if (++inside > 1) overlaps++ }
            await sleep(1)
            if (set.includes(names[1]!)) inside--
          }, { wait: '30s' })
        }
      }))
      assert.equal(overlaps, 0)
    })

    it('one signal: losing any part aborts it first, then the other parts are let go', async () => {
      const [baton, other] = [await ctx.client(), await ctx.client()]
      const names = [ctx.name('multi-sig-a'), ctx.name('multi-sig-b')]
      const lease = await baton.multi(names, { ttl: '10s' }).acquire()
      assert.equal(lease.signal.aborted, false)
      let othersHeldAtAbort: boolean | undefined
      lease.signal.addEventListener('abort', () => { othersHeldAtAbort = lease.leases[0]!.held })
      await baton.forceRelease(names[1]!)
      assert.ok(isBatonError(await aborted(lease.signal), 'LEASE_LOST'))
      assert.equal(othersHeldAtAbort, true, 'the signal fires before the other parts are let go')
      assert.equal(lease.held, false)
      // Without any release() call: nobody can use the set any more, so its other part is free for others.
      const next = await other.mutex(names[0]!).acquire({ wait: ms(10_000) })
      await next.release()
      await lease.release() // nothing left to release, and no failure
      await assert.rejects(lease.extend(), (e: unknown) => isBatonError(e, 'LEASE_LOST'))
    })

    it('a set of one name behaves as that lock: granted, lost with its signal, released', async () => {
      const [baton, other] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('multi-one')
      const controller = new AbortController()
      const lease = await baton.multi([name]).acquire({ signal: controller.signal })
      await baton.forceRelease(name)
      assert.ok(isBatonError(await aborted(lease.signal), 'LEASE_LOST'))
      const next = await other.multi([{ name }]).acquire({ wait: ms(10_000) })
      assert.ok(next.tokens.get(name)! > lease.tokens.get(name)!)
      await next.release()
      await lease.release()
    })

    it('renewed together: a set held past its ttl keeps every part, and extend() renews them all', async () => {
      const [baton, other] = [await ctx.client(), await ctx.client()]
      const names = ['r1', 'r2', 'r3'].map((n) => ctx.name(`multi-renew-${n}`))
      // Long enough that a busy machine's event loop still renews in time (ttl/3 apart, retried every ttl/10).
      const ttl = ms(2500)
      const lease = await baton.multi(names, { ttl }).acquire()
      await sleep(ttl * 1.5) // past every part's first ttl: only renewals keep them
      assert.equal(lease.signal.aborted, false, String(lease.signal.reason))
      assert.equal(await other.multi(names).tryAcquire(), null)
      await lease.extend('20s')
      // The longer ttl as the store answered it to the holder. Another client
      // sees the hold, but on ZooKeeper only as long as the session its node
      // lives in (a node can not move to a longer session): about the first
      // ttl, which a busy machine's timing scale made the test's bound.
      for (const part of lease.leases) assert.ok(part.expiresAt - Date.now() > ttl, `${part.name} was renewed to the longer ttl`)
      for (const name of names) assert.equal((await other.inspect(name))?.holders[0]?.token, lease.tokens.get(name), `${name} is still held by the set`)
      await lease.release()
      const after = await other.multi(names).tryAcquire()
      assert.ok(after, 'released together: every name is free')
      await after.release()
    })

    it('await using releases every part at the end of the block', async () => {
      const baton = await ctx.client()
      const names = [ctx.name('multi-using-a'), ctx.name('multi-using-b')]
      {
        await using held = await baton.multi(names).acquire()
        assert.equal(held.leases.length, 2)
        for (const name of names) assert.equal((await baton.inspect(name))?.holders.length, 1)
      }
      for (const name of names) assert.equal((await baton.inspect(name))?.holders.length ?? 0, 0, `${name} is free`)
      assert.equal(await baton.multi(names).using(() => 'inside'), 'inside')
      for (const name of names) assert.equal((await baton.inspect(name))?.holders.length ?? 0, 0, `${name} is free after using()`)
    })

    it('a busy name in the middle: tryAcquire answers null and keeps nothing', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const names = ['1', '2', '3'].map((n) => ctx.name(`multi-try-${n}`))
      const blocker = await b.mutex(names[1]!).acquire()
      assert.equal(await a.multi(names).tryAcquire(), null)
      for (const name of [names[0]!, names[2]!]) assert.equal((await a.inspect(name))?.holders.length ?? 0, 0, `${name} is free`)
      await blocker.release()
      const lease = await a.multi(names).tryAcquire()
      assert.ok(lease)
      await lease.release()
    })

    it('a set waits in line and is handed over like a single lock, without polling', async (t) => {
      const [holder, waiter] = [await ctx.client(), await ctx.client()]
      const [free, busy] = [ctx.name('multi-line-a'), ctx.name('multi-line-b')]
      const held = await holder.mutex(busy).acquire()
      let attempts = 0
      const original = waiter.driver.acquire.bind(waiter.driver)
      waiter.driver.acquire = (request) => {
        attempts++
        return original(request)
      }
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === busy)
      const handoff = nextEvent<AcquireEvent>('baton:acquire', (m) => m.name === busy && m.owner !== held.owner)
      // A ttl and wait far longer than the pause below: a waiter refreshes its
      // place every queueTtl/3 (queueTtl = min(ttl, wait)), and a refresh that
      // meets the release is granted by its own answer, not handed over (with
      // a fixed 10 s ttl against a pause scaled by the load, one did on MySQL
      // beside two busy loops).
      const waiting = waiter.multi([busy, free], { ttl: ms(40_000) }).acquire({ wait: ms(40_000) })
      await queued
      const before = attempts
      await sleep(ms(500)) // a polling waiter would ask again meanwhile
      await held.release()
      const lease = await waiting
      const granted = await handoff
      if (!waiter.driver.capabilities.handoff) {
        t.diagnostic('this store wakes waiters to retry instead of handing over')
      } else {
        assert.equal(granted.handoff, true, 'the set was handed the busy name by the release')
        assert.equal(attempts - before, 0, 'the waiting set did not poll the store')
      }
      assert.deepEqual(lease.names, [free, busy].sort(compareNames))
      await lease.release()
    })

    it('no deadlock nor livelock: a cycle of overlapping pairs (dining philosophers), many rounds', async () => {
      const clients = [await ctx.client(), await ctx.client(), await ctx.client()]
      const names = ['p', 'q', 'r'].map((n) => ctx.name(`multi-cycle-${n}`))
      const inside = new Map<string, number>()
      let overlaps = 0
      let rounds = 0
      await Promise.all(names.map(async (_, seat) => {
        // Each seat lists its pair in its own order: left then right, so the lists form a cycle.
        const pair = [names[seat]!, names[(seat + 1) % names.length]!]
        const lock = clients[seat]!.multi(pair, { ttl: '10s' })
        for (let i = 0; i < 15; i++) {
          await lock.using(async () => {
            for (const name of pair) if ((inside.set(name, (inside.get(name) ?? 0) + 1).get(name) ?? 0) > 1) overlaps++
            await sleep(1)
            for (const name of pair) inside.set(name, inside.get(name)! - 1)
            rounds++
          }, { wait: '60s' })
        }
      }))
      assert.equal(rounds, 45)
      assert.equal(overlaps, 0)
    })

    it('a part lost while a later one is awaited ends the wait at once (LEASE_LOST), nothing held', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const [first, second] = [ctx.name('multi-midway-a'), ctx.name('multi-midway-b')]
      const blocker = await b.mutex(second, { ttl: '30s' }).acquire()
      const waiting = a.multi([first, second], { ttl: '10s' }).acquire()
      const settled = waiting.then(() => 'acquired', (e: unknown) => e)
      // The set waits in second's line only once its client holds first: force it then. Forced
      // while first's grant is still on its way, the waiter rightly asks again and holds it anew.
      while ((await a.inspect(second))?.waiters.length !== 1) await sleep(20)
      assert.equal((await a.inspect(first))?.holders.length, 1, 'the set holds its first name')
      await b.forceRelease(first)
      // The blocker keeps `second` for its whole ttl: a wait that went on for it would outlast this bound.
      const outcome = await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 15_000, 'still waiting').unref())])
      assert.ok(isBatonError(outcome, 'LEASE_LOST'), `the wait ended with the part's loss, got ${String(outcome)}`)
      for (const name of [first, second]) {
        const holders = (await a.inspect(name))?.holders ?? []
        const shown = holders.map((h) => `${h.owner} token ${h.token} until ${h.expiresAt - Date.now()} ms from now`).join('; ')
        assert.ok(holders.every((h) => h.token === blocker.token), `${name}: only the blocker (token ${blocker.token}) holds, not ${shown}`)
      }
      await blocker.release()
    })

    it('read parts share, write parts exclude, on stores with read-write locks', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const config = ctx.name('multi-config')
      const account = ctx.name('multi-account')
      const one = await a.multi([{ name: config, mode: 'read' }, { name: account, mode: 'write' }]).acquire()
      const shares = await b.multi([{ name: config, mode: 'read' }]).tryAcquire()
      assert.ok(shares, 'a second reader of config is admitted')
      assert.equal(await b.multi([{ name: account, mode: 'write' }]).tryAcquire(), null)
      assert.equal(await b.multi([{ name: config, mode: 'write' }]).tryAcquire(), null, 'a writer of config waits for the readers')
      assert.equal(await b.rwlock(account).read().tryAcquire(), null, 'a reader of account waits for the writer')
      await shares.release()
      await one.release()
    })

    it('sets re-entering an outer hold leave nothing on it once released', async () => {
      const baton = await ctx.client()
      const [outerName, other] = [ctx.name('multi-outer'), ctx.name('multi-inner')]
      const outer = await baton.mutex(outerName, { ttl: '30s' }).acquire()
      // The outer hold's loss callbacks (internal): each set used to add two for as long as the hold lived.
      const callbacks = () => (outer as unknown as { hold: { lossListeners?: { size?: number; length?: number } } }).hold.lossListeners
      const count = () => { const list = callbacks(); return list?.size ?? list?.length ?? 0 }
      const before = count()
      await outer.run(async () => {
        for (let i = 0; i < 50; i++) {
          const set = await baton.multi([outerName, other]).acquire()
          await set.release()
        }
        await baton.multi([outerName, other]).using(() => {})
      })
      assert.equal(count(), before, 'callbacks left on the outer hold by released sets')
      assert.equal(outer.held, true)
      await outer.release()
    })

    it('refuses bad input with INVALID_ARGUMENT', async () => {
      const baton = await ctx.client()
      const invalid = (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT')
      assert.throws(() => baton.multi([]), invalid)
      assert.throws(() => baton.multi(['a', 'a']), invalid)
      assert.throws(() => baton.multi(['ok', '']), invalid)
      assert.throws(() => baton.multi([{ name: 'ok', mode: 'sideways' as 'read' }]), invalid)
      assert.throws(() => baton.multi(Array.from({ length: 65 }, (_, i) => `n${i}`)), invalid)
      assert.throws(() => baton.multi('abc' as unknown as string[]), invalid)
    })
  })
  multiLockFaults(ctx)
}
