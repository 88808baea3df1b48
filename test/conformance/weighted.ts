import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { aborted, nextEvent, sleep, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import type { Baton, Lease } from '../../src/index.js'
import { isBatonError } from '../../src/index.js'
import { ms } from '../harness/timing.js'

const invalid = (e: unknown): boolean => isBatonError(e, 'INVALID_ARGUMENT') && e.retryable === false && e.message.includes('"weight"')

/** Weighted permits (docs/weighted-permits.md): a semaphore's holds count by their weight. */
export function weighted(ctx: SuiteContext): void {
  /** Starts a waiting acquire of `weight` and resolves once the store has it in line. */
  async function queue(client: Baton, name: string, permits: number, weight: number, fair = false): Promise<{ lease: Promise<Lease>; granted: () => boolean }> {
    const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    let done = false
    const lease = client.semaphore(name, { permits, fair, ttl: '20s' }).acquire({ weight, wait: ms(20_000) })
    void lease.then(() => { done = true }, () => {})
    await queued
    return { lease, granted: () => done }
  }

  describe('weighted permits', () => {
    it('never has more than `permits` in use counting each weight, with concurrent acquirers', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const clients = [await ctx.client(), await ctx.client()]
      const name = ctx.name('weighted-bound')
      const permits = 8
      let inUse = 0
      let maxInUse = 0
      let maxHolds = 0
      let holds = 0
      let grants = 0
      await Promise.all(Array.from({ length: 6 }, async (_, flow) => {
        const semaphore = clients[flow % 2]!.semaphore(name, { permits, ttl: '20s' })
        for (let i = 0; i < 12; i++) {
          const weight = 1 + ((flow + i) % 4)
          await semaphore.using(async (lease) => {
            assert.equal(lease.weight, weight)
            inUse += weight
            holds++
            grants++
            maxInUse = Math.max(maxInUse, inUse)
            maxHolds = Math.max(maxHolds, holds)
            await sleep(1)
            inUse -= weight
            holds--
          }, { weight })
        }
      }))
      assert.equal(grants, 72)
      assert.ok(maxInUse <= permits, `at most ${permits} permits in use, saw ${maxInUse}`)
      assert.ok(maxHolds > 1, 'permits were shared')
      assert.equal(await clients[0]!.inspect(name), null)
    })

    for (const fair of [false, true]) {
      it(`a heavy waiter at the head is not starved by light ones behind it (fair: ${fair})`, async (t) => {
        const refused = await ctx.refuses('semaphore')
        if (refused) return t.skip(refused)
        const [a, b, c] = [await ctx.client(), await ctx.client(), await ctx.client()]
        const name = ctx.name(`weighted-heavy-${fair}`)
        const light = a.semaphore(name, { permits: 4, fair, ttl: '20s' })
        const held = [await light.acquire(), await light.acquire(), await light.acquire()]
        const heavy = await queue(b, name, 4, 4, fair)
        // One permit is free, but the head waits for all four: a newcomer may not take it.
        assert.equal(await c.semaphore(name, { permits: 4, fair }).tryAcquire(), null, 'a light newcomer passed a heavy head')
        const order: string[] = []
        const lights = [] as Promise<Lease>[]
        for (let i = 0; i < 3; i++) {
          const next = await queue(c, name, 4, 1, fair)
          lights.push(next.lease.then((lease) => { order.push(`light${i}`); return lease }))
        }
        const heavyLease = heavy.lease.then((lease) => { order.push('heavy'); return lease })
        for (const lease of held) await lease.release()
        const big = await heavyLease
        assert.deepEqual(order, ['heavy'], 'nobody else holds next to a hold of all the permits')
        const view = await a.inspect(name)
        assert.deepEqual(view?.holders.map((h) => h.weight), [4])
        assert.deepEqual(view?.waiters.map((w) => w.weight), [1, 1, 1])
        await big.release()
        const after = await Promise.all(lights)
        assert.deepEqual(order, ['heavy', 'light0', 'light1', 'light2'])
        for (const lease of after) await lease.release()
      })
    }

    it('serves the line in order, handing a release over to as many waiters as now fit; inspect shows weights', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('weighted-fifo')
      const all = await a.semaphore(name, { permits: 4, ttl: '20s' }).acquire({ weight: 4 })
      assert.equal(all.weight, 4)
      const w3 = await queue(b, name, 4, 3)
      const w1 = await queue(b, name, 4, 1)
      const w2 = await queue(b, name, 4, 2)
      const w1b = await queue(b, name, 4, 1)
      let view = await a.inspect(name)
      assert.deepEqual(view?.holders.map((h) => [h.owner, h.weight]), [[all.owner, 4]])
      assert.deepEqual(view?.waiters.map((w) => w.weight), [3, 1, 2, 1])
      assert.ok(view?.waiters.every((w) => w.mode === 'permit'))

      await all.release()
      const [three, one] = [await w3.lease, await w1.lease]
      view = await a.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.weight).sort(), [1, 3])
      assert.deepEqual(view?.waiters.map((w) => w.weight), [2, 1], 'the light waiter behind a heavier one stays behind it')
      assert.equal(w2.granted() || w1b.granted(), false)

      await three.release()
      const [two, oneMore] = [await w2.lease, await w1b.lease]
      view = await a.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.weight).sort(), [1, 1, 2])
      assert.deepEqual(view?.waiters, [])
      assert.ok(two.token > three.token && oneMore.token > one.token)
      await Promise.all([one.release(), two.release(), oneMore.release()])
      assert.equal(await a.inspect(name), null)
    })

    it('bad weights get INVALID_ARGUMENT and leave the store untouched', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      const name = ctx.name('weighted-bad')
      const semaphore = client.semaphore(name, { permits: 8 })
      for (const weight of [0, -1, 1.5, 9, Number.NaN, Infinity, '2', null]) {
        await assert.rejects(semaphore.acquire({ weight: weight as number, wait: 0 }), invalid, `acquire weight ${String(weight)}`)
        await assert.rejects(semaphore.tryAcquire({ weight: weight as number }), invalid, `tryAcquire weight ${String(weight)}`)
        await assert.rejects(semaphore.using(() => {}, { weight: weight as number }), invalid, `using weight ${String(weight)}`)
      }
      await assert.rejects(semaphore.acquire({ weight: 9 }), (e: unknown) => invalid(e) && /never be granted/.test((e as Error).message))
      // A weight is for semaphores only.
      await assert.rejects(client.mutex(name).acquire({ weight: 2 } as never), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
      assert.equal(await client.inspect(name), null)
    })

    it('a weighted holder that dies frees its whole weight within its ttl', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const name = ctx.name('weighted-crash')
      const ttl = ms(1000)
      const client = await ctx.client()
      let dies: () => Promise<void>
      if (ctx.harness.crossProcess) {
        const worker = ctx.worker({ task: 'hold', name, ttl, kind: 'semaphore', permits: 4, weight: 3 })
        await worker.line('held')
        dies = async () => { worker.kill9(); await worker.exited }
      } else {
        t.diagnostic('one process only: the holder is a client closed without releasing')
        const doomed = await ctx.client()
        await doomed.semaphore(name, { permits: 4, ttl }).acquire({ weight: 3, autoExtend: true })
        dies = () => doomed.close()
      }
      const semaphore = client.semaphore(name, { permits: 4 })
      const view = await client.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.weight), [3])
      const small = await semaphore.acquire({ weight: 1, wait: 0 })
      assert.equal(await semaphore.tryAcquire({ weight: 2 }), null)
      await dies()
      const rest = await semaphore.acquire({ weight: 3, wait: ttl + ms(2000) })
      assert.deepEqual((await client.inspect(name))?.holders.map((h) => h.weight).sort(), [1, 3])
      await Promise.all([small.release(), rest.release()])
    })

    it('an expired weighted permit keeps its whole weight during the lock delay', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      if (!client.driver.capabilities.lockDelay) return t.skip('this store has no lock delay')
      const name = ctx.name('weighted-delay')
      const slots = client.semaphore(name, { permits: 4, ttl: ms(200), lockDelay: ms(5000) })
      const expiring = await slots.acquire({ weight: 3 })
      await aborted(expiring.signal)
      await sleep(ms(100)) // past the store's expiry, well within the delay
      assert.equal(await slots.tryAcquire({ weight: 2 }), null, 'the expired hold still takes its 3 permits')
      const one = await slots.tryAcquire({ weight: 1 })
      assert.ok(one, 'the one free permit is usable during the delay')
      await one.release()
    })
  })
}
