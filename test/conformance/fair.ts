import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nextEvent, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'

export function fair(ctx: SuiteContext): void {
  describe('fair mutex', () => {
    it('grants 20 waiters from 2 OS processes in exactly their arrival order', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const client = await ctx.client()
      const name = ctx.name('fair-order')
      const lock = client.mutex(name, { fair: true, ttl: '10s' })
      const holder = await lock.acquire()
      const remote = ctx.worker({ task: 'queue', name, ttl: 10_000, holdMs: 2 })
      const grants: { id: number; token: bigint }[] = []
      const local: Promise<void>[] = []
      for (let id = 0; id < 20; id++) {
        if (id % 2 === 1) {
          remote.send(`wait ${id}`)
          await remote.line(`waiting ${id}`)
        } else {
          const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
          local.push(lock.using(async (lease) => {
            grants.push({ id, token: lease.token })
            await new Promise((r) => setTimeout(r, 2))
          }))
          await queued
        }
      }
      const view = await client.inspect(name)
      assert.equal(view?.waiters.length, 20)
      await holder.release()
      await Promise.all(local)
      for (let id = 1; id < 20; id += 2) {
        const line = await remote.line(`granted ${id} `)
        grants.push({ id, token: BigInt(line.split(' ')[2]!) })
      }
      grants.sort((a, b) => (a.token < b.token ? -1 : 1))
      assert.deepEqual(grants.map((g) => g.id), Array.from({ length: 20 }, (_, i) => i))
    })

    it('a waiter that times out leaves the line at once; the rest keep their order', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('fair-timeout')
      const holder = await a.mutex(name, { fair: true }).acquire()
      const order: string[] = []
      const enqueue = async (label: string, wait?: number) => {
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        const done = b.mutex(name, { fair: true }).acquire(wait === undefined ? {} : { wait }).then(
          async (lease) => { order.push(label); await lease.release() },
          (error: unknown) => { order.push(`${label}:${(error as { code?: string }).code}`) },
        )
        await queued
        return { done }
      }
      const first = await enqueue('first')
      const quitter = await enqueue('quitter', ms(150))
      const last = await enqueue('last')
      await quitter.done
      assert.deepEqual((await a.inspect(name))?.waiters.length, 2)
      await holder.release()
      await Promise.all([first.done, last.done])
      assert.deepEqual(order, ['quitter:LOCK_TIMEOUT', 'first', 'last'])
    })

    it('a waiter killed with kill -9 in the middle of the line stalls the rest at most its ttl', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const client = await ctx.client()
      const name = ctx.name('fair-killed')
      const ttl = ms(1000)
      // The live waiters' ttl bounds how long they sleep between checks.
      const lock = client.mutex(name, { fair: true, ttl })
      const holder = await lock.acquire({ autoExtend: true })
      const before = lock.acquire({ autoExtend: true })
      await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const doomed = ctx.worker({ task: 'wait', name, ttl, fair: true })
      await doomed.line('waiting')
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const after = lock.acquire({ wait: 2 * ttl + ms(3000) })
      await queued
      doomed.kill9()
      await doomed.exited
      await holder.release()
      await (await before).release()
      const lease = await after
      assert.ok(lease.token > holder.token)
      await lease.release()
    })

    it('fair and non-fair holds of one name exclude each other', async () => {
      const client = await ctx.client()
      const name = ctx.name('fair-mixed')
      const fairLease = await client.mutex(name, { fair: true }).acquire()
      assert.equal(await client.mutex(name).tryAcquire(), null)
      await fairLease.release()
      const plain = await client.mutex(name).acquire()
      assert.equal(await client.mutex(name, { fair: true }).tryAcquire(), null)
      await plain.release()
    })
  })
}
