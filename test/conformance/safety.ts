import assert from 'node:assert/strict'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { Mutex } from '../../src/index.js'
import type { SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

/** A deliberately non-atomic read-modify-write: any overlap loses an update. */
async function bump(file: string): Promise<void> {
  const value = Number(await readFile(file, 'utf8'))
  await new Promise((r) => setImmediate(r))
  await writeFile(file, String(value + 1))
}

async function counterFile(): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'baton-safety-')), 'counter')
  await writeFile(file, '0')
  return file
}

/**
 * Every hold here is released by its holder: the ttl only has to outlast a
 * stall of a loaded machine (a lapse would be a LEASE_LOST, not this test's
 * subject), so it is long and scaled.
 */
const SAFE_TTL_MS = ms(30_000)

export function safety(ctx: SuiteContext): void {
  describe('mutual exclusion', () => {
    it('2,000 acquisitions by 40 flows over 2 clients in one process lose no update', async () => {
      const name = ctx.name('safety')
      const file = await counterFile()
      const locks: Mutex[] = []
      for (const client of [await ctx.client(), await ctx.client()]) locks.push(client.mutex(name, { ttl: SAFE_TTL_MS }))
      const flows = 40
      const perFlow = 50
      await Promise.all(
        Array.from({ length: flows }, async (_, flow) => {
          const lock = locks[flow % locks.length]!
          for (let i = 0; i < perFlow; i++) await lock.using(() => bump(file))
        }),
      )
      assert.equal(Number(await readFile(file, 'utf8')), flows * perFlow)
    })

    it('2,100 acquisitions by 3 OS processes lose no update', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const name = ctx.name('safety-processes')
      const file = await counterFile()
      const perProcess = 700
      const workers = [1, 2].map(() => ctx.worker({ task: 'counter', name, file, iterations: perProcess, ttl: SAFE_TTL_MS }))
      const lock = (await ctx.client()).mutex(name, { ttl: SAFE_TTL_MS })
      const local = Promise.all(Array.from({ length: 7 }, async () => {
        for (let i = 0; i < perProcess / 7; i++) await lock.using(() => bump(file))
      }))
      await Promise.all([local, ...workers.map((w) => w.line('done', ms(600_000)))])
      assert.equal(Number(await readFile(file, 'utf8')), perProcess * 3)
    })

    it('never has two holders at once, checked at every grant', async () => {
      const name = ctx.name('safety-overlap')
      const lock = (await ctx.client()).mutex(name, { ttl: SAFE_TTL_MS })
      let inside = 0
      let maxInside = 0
      await Promise.all(Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 20; i++) {
          await lock.using(async () => {
            inside++
            maxInside = Math.max(maxInside, inside)
            await new Promise((r) => setImmediate(r))
            inside--
          })
        }
      }))
      assert.equal(maxInside, 1)
    })
  })
}
