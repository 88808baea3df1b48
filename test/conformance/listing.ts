import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nextEvent, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import type { Lease } from '../../src/index.js'

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

    it('list() pages: byte order, after a cursor, at most a limit, idle names skipped', async () => {
      const client = await ctx.client()
      const prefix = ctx.name('pages') + '/'
      // Names that key layouts put out of name order: "a-b", "a.b", "a b" sort
      // before "a/..." by key but after "a" by name; "a/0" may sort its keys
      // before those of "a" (`a/<id>`); prefixes of each other; "é" (2 bytes)
      // after "z"; an astral character (4 bytes) after U+FF71 (3 bytes), though
      // UTF-16 puts it before.
      const awkward = ['a', 'a b', 'a!', 'a-b', 'a-b-c', 'a.b', 'a/', 'a/0', 'a/0/1', 'a/-', 'a/b', 'a/z', 'ab',
        'b', 'idle', 'p', 'p-', 'p-q', 'z', 'é', '日本', '\uff71', '\u{1f600}']
      const names = awkward.map((n) => prefix + n)
      // Renewed: walking every page three times takes longer than the default
      // ttl where a page is slow (a Cluster reads the index of every slot).
      const leases = await Promise.all(names.map((n) => client.mutex(n).acquire({ autoExtend: true })))
      await leases[names.indexOf(`${prefix}idle`)]!.release()
      // Two waiters: a line of several entries, which a store may read in parts.
      const queued = `${prefix}a-b`
      const waiters: Promise<Lease>[] = []
      for (const other of [await ctx.client(), await ctx.client()]) {
        const waiting = nextEvent<WaitEvent>('baton:wait', (m) => m.name === queued)
        waiters.push(other.mutex(queued).acquire())
        await waiting
      }
      const live = names.filter((n) => !n.endsWith('idle')).sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
      assert.deepEqual((await client.list({ prefix })).map((v) => v.name), live)
      for (const limit of [1, 2, 3]) {
        const walked: string[] = []
        let after: string | undefined
        for (let pages = 0; pages <= live.length; pages++) {
          const page = await client.list({ prefix, limit, ...(after ? { after } : {}) })
          assert.ok(page.length <= limit)
          for (const view of page) assert.equal(view.waiters.length, view.name === queued ? 2 : 0, `${view.name}'s waiters in pages of ${limit}`)
          walked.push(...page.map((v) => v.name))
          if (page.length < limit) break
          after = page.at(-1)!.name
        }
        assert.deepEqual(walked, live, `pages of ${limit}`)
      }
      // Cursors that are not names: the page starts at the next name.
      for (const [after, next] of [['a.', 'a.b'], ['a/0/', 'a/0/1'], ['a/0/2', 'a/b'], ['p-r', 'z']]) {
        assert.deepEqual((await client.list({ prefix, after: prefix + after, limit: 1 })).map((v) => v.name), [prefix + next], `after ${after}`)
      }
      await assert.rejects(client.list({ prefix, limit: 0 }), (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT')
      await leases[names.indexOf(queued)]!.release()
      for (const waiter of waiters) await (await waiter).release()
      await Promise.all(leases.map((l) => l.release()))
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
