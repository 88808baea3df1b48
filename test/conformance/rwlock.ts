import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isBatonError } from '../../src/index.js'
import { nextEvent, sleep, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'

export function rwlock(ctx: SuiteContext): void {
  describe('read-write lock', () => {
    it('readers overlap; a writer never overlaps a reader or another writer', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('rw-overlap')
      const locks = [a.rwlock(name), b.rwlock(name)]
      let readers = 0
      let writers = 0
      let maxReaders = 0
      const violations: string[] = []
      const check = () => {
        if (writers > 1 || (writers === 1 && readers > 0)) violations.push(`${writers} writers with ${readers} readers`)
      }
      await Promise.all(Array.from({ length: 12 }, async (_, flow) => {
        const lock = locks[flow % 2]!
        for (let i = 0; i < 15; i++) {
          if (flow % 4 === 0) {
            await lock.write().using(async () => { writers++; check(); await sleep(1); writers-- })
          } else {
            await lock.read().using(async () => {
              readers++; maxReaders = Math.max(maxReaders, readers); check(); await sleep(2); readers--
            })
          }
        }
      }))
      assert.deepEqual(violations, [])
      assert.ok(maxReaders > 1, `readers overlapped (max ${maxReaders} at once)`)
    })

    it('a writer is granted during continuous reader traffic (no writer starvation)', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const [readersClient, writerClient] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('rw-starvation')
      let stop = false
      const traffic = Promise.all(Array.from({ length: 6 }, async () => {
        while (!stop) await readersClient.rwlock(name).read().using(() => sleep(5))
      }))
      await sleep(ms(100))
      const writer = await writerClient.rwlock(name).write().acquire({ wait: ms(5000) })
      assert.equal((await writerClient.inspect(name))?.holders.length, 1)
      await writer.release()
      stop = true
      await traffic
    })

    it('readers queued behind a writer are admitted together when it leaves', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('rw-batch')
      const writer = await a.rwlock(name).write().acquire()
      const readers = []
      for (let i = 0; i < 3; i++) {
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        readers.push(b.rwlock(name).read().acquire())
        await queued
      }
      // A reader arriving now waits behind the queued ones, not ahead of a writer.
      assert.equal(await b.rwlock(name).write().tryAcquire(), null)
      await writer.release()
      const leases = await Promise.all(readers)
      const view = await a.inspect(name)
      assert.equal(view?.holders.length, 3)
      assert.ok(view?.holders.every((h) => h.mode === 'read'))
      assert.equal(view?.kind, 'rwlock')
      for (const lease of leases) assert.ok(lease.token > writer.token)
      await Promise.all(leases.map((l) => l.release()))
    })

    it('a writer may take the read lock (downgrade); a reader taking the write lock fails fast', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      const name = ctx.name('rw-reentry')
      const lock = client.rwlock(name)
      await lock.write().using(async (write) => {
        const read = await lock.read().acquire({ wait: ms(100) })
        assert.equal(read.token, write.token)
        assert.equal(read.mode, 'write', 'the read hold rides on the write hold')
        await read.release()
      })
      await lock.read().using(async () => {
        const started = performance.now()
        await assert.rejects(lock.write().acquire({ wait: '1m' }), (e) => isBatonError(e, 'INVALID_ARGUMENT') && /upgrad/.test((e as Error).message))
        assert.ok(performance.now() - started < 60_000)
        const nested = await lock.read().acquire()
        await nested.release()
      })
      assert.equal(await client.inspect(name), null)
    })

    it('releasing the write lock while its read lock is held keeps only a read hold (downgrade)', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('rw-downgrade')
      const write = await a.rwlock(name).write().acquire({ autoExtend: true })
      const read = await write.run(() => a.rwlock(name).read().acquire())
      const queuedReader = b.rwlock(name).read().acquire({ wait: ms(5000) })
      await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      await write.release()
      assert.equal(read.held, true)
      assert.equal(read.mode, 'read')
      assert.equal(read.token, write.token, 'a downgrade is the same grant')
      const other = await queuedReader // admitted by the downgrade
      assert.equal(await b.rwlock(name).write().tryAcquire(), null)
      const view = await a.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.mode), ['read', 'read'])
      await Promise.all([read.release(), other.release()])
      assert.equal(await a.inspect(name), null)
    })

    it('tokens increase across read and write grants', async (t) => {
      const refused = await ctx.refuses('rwlock')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      const lock = client.rwlock(ctx.name('rw-tokens'))
      const tokens: bigint[] = []
      for (const side of ['read', 'write', 'read', 'read', 'write'] as const) {
        const lease = await lock[side]().acquire()
        tokens.push(lease.token)
        await lease.release()
      }
      const [r1, r2] = [await lock.read().acquire(), await lock.read().acquire()]
      tokens.push(r1.token, r2.token)
      await Promise.all([r1.release(), r2.release()])
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!)
    })
  })
}
