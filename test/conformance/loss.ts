import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError, type Lease } from '../../src/index.js'
import { aborted, nextEvent, nextRelease, sleep, withTimeout, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import type { AcquireRequest, ExtendResult } from '../../src/core/driver.js'
import { newClientId, newOwnerId } from '../../src/core/owner.js'
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

    it('lease.signal fires when another client releases its hold with its owner and token (as a lock server does for another server\'s lease)', async (t) => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-released-elsewhere')
      // The exact request the store saw, so the other client's release names the very hold.
      const sent: AcquireRequest[] = []
      const acquire = a.driver.acquire.bind(a.driver)
      a.driver.acquire = (request) => {
        sent.push(request)
        return acquire(request)
      }
      let lease: Lease
      try {
        lease = await a.mutex(name, { ttl: '30s' }).acquire()
      } finally {
        a.driver.acquire = acquire
      }
      const request = sent.find((r) => r.owner === lease.owner)!
      if (!(await b.driver.release({ ...request, token: lease.token }))) {
        await lease.release()
        // A test that skips itself gets no afterEach: its clients are closed here.
        await Promise.all([a.close(), b.close()])
        return t.skip(`${b.store} releases only the holds of the client that took them: another client's release answers false`)
      }
      const reason = await aborted(lease.signal, ms(5000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
      assert.match(reason.message, /another client/)
      assert.equal(lease.held, false)
      // Nobody holds it. (Redlock's view is its majority's: a node that did
      // not answer the release in time may keep the hold, counted by nobody,
      // until its ttl.)
      assert.deepEqual((await b.inspect(name))?.holders ?? [], [])
    })

    it('a forced release frees the name: nobody is granted by it, a dead waiter at the head of a fair line never gets it', async () => {
      const [a, b, admin] = [await ctx.client(), await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-force-line')
      const lock = a.mutex(name, { fair: true, ttl: '30s' })
      const holder = await lock.acquire()
      // A waiter whose process died: its line entry is there, nobody will ever retry or release it.
      const dead = deadWaiter(name)
      assert.equal((await b.driver.acquire(dead)).status, 'busy')
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const live = b.mutex(name, { fair: true, ttl: '30s' }).acquire({ wait: ms(10_000) })
      await queued
      assert.deepEqual((await admin.inspect(name))?.waiters.map((w) => w.owner)[0], dead.owner)

      assert.equal(await admin.forceRelease(name), true)
      const reason = await aborted(holder.signal, ms(5000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'))
      const lease = await live // woken to retry at once, not after the dead entry's 60 s
      const view = await admin.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.owner), [lease.owner], 'the live waiter holds it, the dead one never did')
      assert.ok(lease.token > holder.token)
      await lease.release()
      await b.driver.release(dead)
    })

    it('a forced release racing a hand-over is never lost: the new lease is held in the store, or its signal fired', async () => {
      const [a, b, admin] = [await ctx.client(), await ctx.client(), await ctx.client()]
      // The race is between the store's two messages (granted, then lost); a few rounds make it likely on every store.
      for (let round = 0; round < 8; round++) {
        const name = ctx.name(`loss-force-handoff-${round}`)
        const holder = await a.mutex(name).acquire()
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        const waiting = b.mutex(name).acquire({ wait: ms(10_000) })
        await queued
        const released = holder.release()
        const forced = admin.forceRelease(name)
        await Promise.all([released, forced])
        const lease = await waiting
        const view = await admin.inspect(name)
        if (view?.holders.some((h) => h.owner === lease.owner)) {
          await lease.release()
        } else {
          // The store dropped it: the signal fires (a store that notifies
          // through watches may tell the client a moment after inspect saw it).
          const reason = await aborted(lease.signal, ms(5000))
          assert.ok(isBatonError(reason, 'LEASE_LOST'), `round ${round}: ${String(reason)}`)
          assert.equal(lease.held, false)
        }
      }
    })

    it('a hand-over counts the lease from before the store granted it, also after an event-loop stall', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-handoff-stall')
      const holder = await a.mutex(name, { ttl: '10s' }).acquire()
      // Synchronous work (a GC pause, a busy loop) right when the hand-over arrives.
      const watch = b.driver.watch.bind(b.driver)
      b.driver.watch = (lockName, owner, onWake) => watch(lockName, owner, (wake) => {
        if (wake.type === 'granted') busyWait(ms(800))
        onWake(wake)
      })
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const waiting = b.mutex(name, { ttl: ms(3000) }).acquire()
      await queued
      await sleep(ms(300))
      await holder.release()
      const lease = await waiting
      b.driver.watch = watch
      const storeEnd = (await a.inspect(name))?.holders[0]?.expiresAt
      assert.ok(storeEnd !== undefined)
      await aborted(lease.signal, ms(10_000))
      const lostAt = Date.now()
      // Both are epoch ms of this machine's clock (the store runs here).
      assert.ok(lostAt <= storeEnd, `the signal fired ${lostAt - storeEnd} ms after the store let the lease go`)
    })

    it('a renewal whose answer arrives after the hold was declared lost leaves no hold behind', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('loss-late-renewal')
      let lease: Lease | undefined
      // The renewal runs in the store at once; its answer is held back until the client gave the hold up.
      const extend = a.driver.extend.bind(a.driver)
      let renewed!: (results: ExtendResult[]) => void
      const storeRenewed = new Promise<ExtendResult[]>((resolve) => { renewed = resolve })
      a.driver.extend = async (holds, ttlMs) => {
        a.driver.extend = extend
        const results = await extend(holds, ttlMs)
        renewed(results)
        await aborted(lease!.signal)
        return results
      }
      const released = nextRelease(a)
      lease = await a.mutex(name, { ttl: ms(900) }).acquire({ autoExtend: true })
      const results = await withTimeout(storeRenewed, ms(5000), 'the watchdog to renew')
      assert.deepEqual(results.map((r) => r.status), ['extended'], 'the store renewed it')
      const reason = await aborted(lease.signal, ms(5000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'))
      assert.equal(await withTimeout(released, ms(5000), 'the late-renewed hold to be released'), true)
      assert.equal(await a.inspect(name), null)
      const next = await b.mutex(name).tryAcquire()
      assert.ok(next, 'the name is free at once, not a whole ttl later')
      await next.release()
    })

    it('the watchdog keeps a using() hold alive well past its ttl', async () => {
      const client = await ctx.client()
      const name = ctx.name('loss-watchdog')
      const renewals = nextEvent<{ name: string }>('baton:extend', (m) => m.name === name)
      // A ttl no stall of a busy machine reaches: the verdict needs the watchdog to renew in time.
      const ttl = ms(1500)
      await client.mutex(name, { ttl }).using(async (lease) => {
        await renewals
        // Past a whole ttl after the first renewal: alive only if renewed again.
        await new Promise((r) => setTimeout(r, ttl + ms(300)))
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

function busyWait(forMs: number): void {
  const until = performance.now() + forMs
  while (performance.now() < until) {
    // Blocks the event loop on purpose.
  }
}

/** A line entry as a client would leave it before dying (60 s ttl and line ttl). */
function deadWaiter(name: string): AcquireRequest {
  return {
    name, kind: 'mutex', mode: 'exclusive', fair: true, permits: 1, lockDelayMs: 0,
    owner: newOwnerId(newClientId()), ttlMs: 60_000, enqueue: true, queueTtlMs: 60_000, retry: false,
  }
}
