import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError, type Baton, type Lease } from '../../src/index.js'
import { aborted, countEvents, nextEvent, nextRelease, sleep, withTimeout, type SuiteContext } from './context.js'
import type { AcquireEvent, WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'

/** Counts the store attempts a client makes (instrumentation of the real driver, not a mock). */
function countAttempts(client: Baton): { count: () => number; owners: Set<string> } {
  const driver = client.driver
  const original = driver.acquire.bind(driver)
  let n = 0
  const owners = new Set<string>()
  driver.acquire = (request) => {
    n++
    owners.add(request.owner)
    return original(request)
  }
  return { count: () => n, owners }
}

/** Holds back the store's answers to this client's attempts until open() (the attempt itself runs at once). */
function holdReplies(client: Baton): { sent: Promise<void>; open: () => void } {
  const driver = client.driver
  const original = driver.acquire.bind(driver)
  let open!: () => void
  const opened = new Promise<void>((resolve) => { open = resolve })
  let sent!: () => void
  const first = new Promise<void>((resolve) => { sent = resolve })
  driver.acquire = async (request) => {
    const result = original(request)
    sent()
    await opened
    return result
  }
  return { sent: first, open: () => { driver.acquire = original; open() } }
}

export function waiting(ctx: SuiteContext): void {
  describe('waiting', () => {
    it('gives LOCK_TIMEOUT, naming the holder every time, when wait runs out', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      // Several waits side by side, short and long (the holder must be named
      // however the wait ended: between attempts, with one in flight, after line refreshes).
      await Promise.all([150, 700, 1500, 1500, 1500, 1500].map(async (wait, i) => {
        const name = ctx.name(`wait-timeout-${i}`)
        const holder = await a.mutex(name).acquire()
        const error = await b.mutex(name).acquire({ wait: ms(wait) }).catch((e: unknown) => e)
        assert.ok(isBatonError(error, 'LOCK_TIMEOUT'), String(error))
        assert.equal(error.retryable, true)
        assert.match(error.message, /"wait"/)
        assert.equal(error.holder?.owner, holder.owner, `wait ${wait} ms: LOCK_TIMEOUT names the holder`)
        assert.match(error.message, new RegExp(`held by ${holder.owner}`))
        assert.deepEqual((await b.inspect(name))?.waiters, [], 'a waiter that gave up leaves the line')
        await holder.release()
      }))
      // The wait ends with its attempt still out (a slow store): the holder is named all the same.
      const slow = await ctx.client()
      const name = ctx.name('wait-timeout-slow')
      const holder = await a.mutex(name).acquire()
      const replies = holdReplies(slow)
      const error = await slow.mutex(name).acquire({ wait: ms(300) }).catch((e: unknown) => e)
      replies.open()
      assert.ok(isBatonError(error, 'LOCK_TIMEOUT'), String(error))
      assert.equal(error.holder?.owner, holder.owner, 'LOCK_TIMEOUT with an attempt in flight names the holder')
      await holder.release()
    })

    it('tryAcquire() returns null at once when the lock is held', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-try')
      const holder = await a.mutex(name).acquire()
      assert.equal(await b.mutex(name).tryAcquire(), null)
      await holder.release()
      const lease = await b.mutex(name).tryAcquire()
      assert.ok(lease)
      await lease.release()
    })

    it('acquire({ wait: 0 }) and using(fn, { wait: 0 }) give LOCK_TIMEOUT when busy, never null', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-zero')
      const holder = await a.mutex(name).acquire()
      const lock = b.mutex(name)
      const timedOut = (e: unknown) => isBatonError(e, 'LOCK_TIMEOUT') && e.retryable
      await assert.rejects(lock.acquire({ wait: 0 }), timedOut)
      await assert.rejects(lock.acquire({ wait: '0ms' }), timedOut)
      let ran = false
      await assert.rejects(lock.using(() => { ran = true }, { wait: 0 }), timedOut)
      assert.equal(ran, false)
      assert.deepEqual((await b.inspect(name))?.waiters, [], 'a zero wait never joins the line')
      await holder.release()
      const free = await lock.acquire({ wait: 0 })
      await free.release()
    })

    it('gives ABORTED for a signal aborted before or during the wait, and leaves the line', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-abort')
      const holder = await a.mutex(name).acquire()
      await assert.rejects(b.mutex(name).acquire({ signal: AbortSignal.abort() }), (e) => isBatonError(e, 'ABORTED'))

      const controller = new AbortController()
      const waiting = b.mutex(name).acquire({ signal: controller.signal })
      await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      controller.abort(new Error('shutting down'))
      await assert.rejects(waiting, (e) => isBatonError(e, 'ABORTED'))
      // The line is left before ABORTED, unless an attempt was in flight at
      // the abort (a store notice can start one at any moment: a Cluster
      // resubscription retries every waiter): ABORTED comes at once then, and
      // the entry is undone as soon as that attempt lands (the next test).
      const deadline = Date.now() + ms(5000)
      let waiters = (await b.inspect(name))?.waiters
      while (waiters?.length && Date.now() < deadline) {
        await sleep(20)
        waiters = (await b.inspect(name))?.waiters
      }
      assert.deepEqual(waiters, [])
      await holder.release()
      assert.equal(await a.inspect(name), null)
    })

    it('gives ABORTED at once for a signal aborted while an attempt is in flight, and undoes the attempt', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      for (const busy of [true, false]) {
        const name = ctx.name(`wait-abort-in-flight-${busy ? 'busy' : 'free'}`)
        const holder = busy ? await a.mutex(name).acquire() : undefined
        // The store answers this client's attempts only when the gate opens.
        const gate = holdReplies(b)
        const released = nextRelease(b)
        const controller = new AbortController()
        const waiting = b.mutex(name).acquire({ signal: controller.signal })
        await gate.sent
        controller.abort(new Error('shutting down'))
        await withTimeout(assert.rejects(waiting, (e) => isBatonError(e, 'ABORTED')), ms(5000), 'ABORTED with the attempt still in flight')
        gate.open()
        await withTimeout(released, ms(5000), 'the aborted attempt to be undone')
        const view = await a.inspect(name)
        assert.deepEqual(view?.waiters ?? [], [], 'no line entry is left')
        assert.deepEqual(view?.holders.map((h) => h.owner) ?? [], holder ? [holder.owner] : [], 'no hold is left')
        await holder?.release()
      }
    })

    it('close() ends pending acquires at once with CLOSED, leaves no line entry, and later calls say the client is closed', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-close')
      const holder = await a.mutex(name).acquire()
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const waiting = b.mutex(name).acquire()
      await queued
      const closing = b.close()
      const closed = (e: unknown) => isBatonError(e, 'CLOSED') && !e.retryable && /closed/.test((e as Error).message)
      await withTimeout(assert.rejects(waiting, closed), ms(5000), 'the pending acquire to end')
      await closing
      assert.deepEqual((await a.inspect(name))?.waiters, [], 'the closed client left the line')
      await holder.release()
      assert.equal(await a.inspect(name), null, 'nobody was handed the lock')
      await assert.rejects(b.mutex(name).acquire(), closed)
      await assert.rejects(b.mutex(name).tryAcquire(), closed)
      await assert.rejects(b.inspect(name), closed)
      await assert.rejects(b.list(), closed)
      await assert.rejects(b.forceRelease(name), closed)
      await b.close()
    })

    it('using() releases when its function throws, and passes the error on', async () => {
      const client = await ctx.client()
      const name = ctx.name('wait-using-throws')
      const lock = client.mutex(name)
      const boom = new Error('boom')
      await assert.rejects(lock.using(async () => { throw boom }), (e) => e === boom)
      assert.equal(await client.inspect(name), null)
      const again = await lock.tryAcquire()
      assert.ok(again)
      await again.release()
    })

    it('a release hands over to exactly one waiter, in arrival order, without polling', async (t) => {
      const clients = [await ctx.client(), await ctx.client(), await ctx.client()]
      if (!clients[0]!.driver.capabilities.handoff) return t.skip('this store wakes waiters to retry instead of handing over')
      const name = ctx.name('wait-handoff')
      const holder = await clients[0]!.mutex(name).acquire()
      const attempts = clients.map(countAttempts)
      const order: number[] = []
      const waiters = 6
      const pending: Promise<void>[] = []
      for (let i = 0; i < waiters; i++) {
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        // A long ttl: a waiter refreshes its place every queueTtl/3 (the ttl
        // here), and a refresh is an attempt; none may fall within the chain
        // of hand-overs, however slow the machine makes it.
        pending.push(clients[i % clients.length]!.mutex(name, { ttl: ms(40_000) }).acquire().then(async (lease) => {
          order.push(i)
          await lease.release()
        }))
        await queued
      }
      const before = attempts.reduce((sum, a) => sum + a.count(), 0)
      const handoffs = countEvents<AcquireEvent>('baton:acquire', (m) => m.name === name && m.handoff)
      await holder.release()
      await Promise.all(pending)
      handoffs.stop()
      assert.deepEqual(order, [0, 1, 2, 3, 4, 5])
      assert.equal(handoffs.count(), waiters, 'every waiter was handed the lock by a release')
      assert.equal(attempts.reduce((sum, a) => sum + a.count(), 0) - before, 0, 'no waiter polled the store')
    })

    it('a holder dying with many waiters brings at most a few attempts to the store, not one per waiter', async () => {
      const clients = [await ctx.client(), await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-herd')
      const dying = await clients[0]!.mutex(name, { ttl: ms(1000) }).acquire() // never renewed nor released
      const attempts = clients.map(countAttempts)
      const pending: Promise<Lease>[] = []
      for (let i = 0; i < 20; i++) {
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        // A long ttl: no line refresh (every queueTtl/3) falls in the window measured.
        pending.push(clients[i % clients.length]!.mutex(name, { ttl: ms(40_000) }).acquire())
        await queued
      }
      const before = attempts.reduce((sum, a) => sum + a.count(), 0)
      for (const a of attempts) a.owners.clear()
      await aborted(dying.signal)
      await Promise.race(pending)
      await sleep(ms(300)) // a herd at the lease end would have struck by now
      const sent = attempts.reduce((sum, a) => sum + a.count(), 0) - before
      const askers = attempts.reduce((sum, a) => sum + a.owners.size, 0)
      // A herd is every waiter asking (20). Without one, each client asks for
      // its line at the lease end (3 waiters ask). A store whose attempts can
      // split the vote (Redlock: three clients asking three nodes at once)
      // has those same waiters ask again, a round per split, and splits come
      // more often the busier the machine (13 attempts seen beside two busy
      // loops): so the waiters that asked are counted, not the attempts,
      // which tells a herd from that whatever the load.
      assert.ok(askers < 10, `${askers} of 20 waiters asked the store when the holder's lease ran out (${sent} attempts)`)
      for (const next of pending) await (await next).release()
    })

    it('a waiter gets the lock once it is free, also after a long wait', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('wait-liveness')
      const holder = await a.mutex(name, { ttl: '10s' }).acquire()
      const waiter = b.mutex(name).acquire({ wait: ms(10_000) })
      await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      await new Promise((r) => setTimeout(r, ms(200)))
      await holder.release()
      const lease = await waiter
      assert.ok(lease.token > holder.token)
      await lease.release()
    })
  })
}
