import assert from 'node:assert/strict'
import { mkdtemp, readFile, writeFile, appendFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { nextEvent, sleep, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'

/** The most "+" entries open at once in a log of "+" (enter) and "-" (leave). */
function maxOpen(log: string): number {
  let open = 0
  let max = 0
  for (const c of log) {
    open += c === '+' ? 1 : -1
    max = Math.max(max, open)
  }
  return max
}

export function semaphore(ctx: SuiteContext): void {
  describe('semaphore', () => {
    it('never has more than N holders, across OS processes', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const name = ctx.name('sem-bound')
      const file = join(await mkdtemp(join(tmpdir(), 'baton-sem-')), 'log')
      await writeFile(file, '')
      const permits = 3
      const workers = ctx.harness.crossProcess
        ? [1, 2].map(() => ctx.worker({ task: 'permits', name, file, iterations: 150, permits, ttl: 10_000 }))
        : []
      if (!ctx.harness.crossProcess) t.diagnostic('one process only: this store lives in one process')
      const semaphore = (await ctx.client()).semaphore(name, { permits, ttl: '10s' })
      await Promise.all([
        ...Array.from({ length: 6 }, async () => {
          for (let i = 0; i < 25; i++) {
            await semaphore.using(async () => {
              await appendFile(file, '+')
              await new Promise((r) => setImmediate(r))
              await appendFile(file, '-')
            })
          }
        }),
        ...workers.map((w) => w.line('done', 120_000)),
      ])
      const log = await readFile(file, 'utf8')
      assert.equal(log.length, 2 * (150 + 150 * workers.length))
      const max = maxOpen(log)
      assert.ok(max <= permits, `at most ${permits} holders, saw ${max}`)
      assert.ok(max > 1, 'permits were shared')
    })

    it('with N=1 it is a mutex', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      const semaphore = client.semaphore(ctx.name('sem-one'), { permits: 1 })
      let inside = 0
      let max = 0
      await Promise.all(Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 10; i++) {
          await semaphore.using(async () => { inside++; max = Math.max(max, inside); await sleep(1); inside-- })
        }
      }))
      assert.equal(max, 1)
    })

    it('each permit is its own lease; inspect shows holders and waiters', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('sem-inspect')
      const semaphore = a.semaphore(name, { permits: 2, ttl: '10s' })
      const [p1, p2] = [await semaphore.acquire(), await semaphore.acquire()]
      assert.notEqual(p1.owner, p2.owner)
      assert.ok(p2.token > p1.token)
      assert.equal(await semaphore.tryAcquire(), null)
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
      const third = b.semaphore(name, { permits: 2 }).acquire({ wait: ms(5000) })
      await queued
      const view = await a.inspect(name)
      assert.equal(view?.kind, 'semaphore')
      assert.equal(view?.permits, 2)
      assert.deepEqual(view?.holders.map((h) => h.owner).sort(), [p1.owner, p2.owner].sort())
      assert.ok(view?.holders.every((h) => h.mode === 'permit' && h.count === 1))
      assert.equal(view?.waiters.length, 1)
      await p1.release()
      const p3 = await third
      assert.ok(p3.token > p2.token)
      await Promise.all([p2.release(), p3.release()])
      assert.equal(await a.inspect(name), null)
    })

    it("a permit of a holder killed with kill -9 comes back after its ttl", async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const name = ctx.name('sem-crash')
      const ttl = ms(1000)
      const worker = ctx.worker({ task: 'hold', name, ttl, kind: 'semaphore', permits: 2 })
      await worker.line('held')
      const semaphore = (await ctx.client()).semaphore(name, { permits: 2 })
      const mine = await semaphore.acquire()
      worker.kill9()
      await worker.exited
      const returned = await semaphore.acquire({ wait: ttl + ms(2000) })
      await Promise.all([mine.release(), returned.release()])
    })
  })
}
