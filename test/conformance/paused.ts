import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import { describe, it } from 'node:test'
import type { Baton } from '../../src/index.js'
import { sleep, withTimeout, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

/** What one look at a hold saw (the worker's 'freeze' task prints the same). */
interface Look {
  what: string
  /** The signal taken before the pause. */
  aborted: boolean
  code: string | undefined
  held: boolean
  /** The signal read again from the hold. */
  fresh: boolean
}

const LAPSED = { aborted: true, code: 'LEASE_LOST', held: false, fresh: true }

/**
 * A client that stood still past its lease (SIGSTOP, a GC pause, a long
 * synchronous step) must never see the lapsed hold as held: `held` and
 * `signal` follow the monotonic deadline the moment they are read, even when
 * the first code to run after the pause is a timer that was already due
 * before the client's own loss timer.
 */
export function pausedHolders(ctx: SuiteContext): void {
  describe('a paused holder', () => {
    it('frozen (SIGSTOP) past its lease while another takes over: its first looks say lapsed (lease, leadership, multi set)', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process: the synchronous-step test covers it')
      const stat = await readFile('/proc/self/stat', 'utf8').catch(() => undefined)
      if (stat === undefined) return t.skip('no /proc to see that the worker stopped')
      const name = ctx.name('frozen')
      const ttl = ms(1000)
      const frozen = ctx.worker({ task: 'freeze', name, ttl })
      await frozen.line('stopping')
      await withTimeout(stopped(frozen.child.pid!), ms(15_000), 'the worker to stop')
      const other = await ctx.client()
      // A bound, not a measure: stores with a lease floor (etcd, ZooKeeper) let go later than the ttl.
      const bound = ttl + ms(30_000)
      const taken = [
        await other.mutex(name).acquire({ wait: bound }),
        await other.election(`${name}/leader`).campaign({ wait: bound }),
        await other.multi([`${name}/m1`, `${name}/m2`]).acquire({ wait: bound }),
      ]
      frozen.child.kill('SIGCONT')
      for (const when of ['sync', 'immediate', 'timer']) {
        const prefix = `look ${when} `
        const seen = JSON.parse((await frozen.line(prefix)).slice(prefix.length)) as Look[]
        assert.equal(seen.length, 3)
        for (const look of seen) assert.deepEqual(look, { what: look.what, ...LAPSED }, `${when}: the ${look.what} looks held after its lease lapsed`)
      }
      for (const hold of taken) await hold.release()
    })

    it('a synchronous step longer than the lease: the first looks after it say lapsed (lease, leadership, multi set)', async () => {
      const client = await ctx.client()
      const name = ctx.name('blocked')
      const held = await holdAll(client, name, ms(500))
      const signals = Object.fromEntries(Object.entries(held).map(([what, h]) => [what, h.signal]))
      const looks = new Map<string, Look[]>()
      const look = (when: string): void => {
        looks.set(when, Object.entries(held).map(([what, h]) => {
          const signal = signals[what]!
          return { what, aborted: signal.aborted, code: (signal.reason as { code?: string } | undefined)?.code, held: h.held, fresh: h.signal.aborted }
        }))
      }
      const lapsed = new Promise<void>((resolve) => {
        setTimeout(() => { look('timer'); resolve() }, 1)
        setImmediate(() => look('immediate'))
      })
      // Block the event loop until every deadline has passed (by the same monotonic clock).
      const until = performance.now() + Math.max(held.lease.remainingMs(), held.leadership.lease.remainingMs(), ...held.set.leases.map((l) => l.remainingMs())) + 1
      while (performance.now() < until) { /* a long synchronous step */ }
      look('sync')
      await lapsed
      for (const [when, seen] of looks) {
        for (const one of seen) assert.deepEqual(one, { what: one.what, ...LAPSED }, `${when}: the ${one.what} looks held after its lease lapsed`)
      }
      assert.equal(looks.size, 3)
      await held.set.release()
      await held.leadership.resign().catch(() => {})
      await held.lease.release()
    })
  })
}

async function holdAll(client: Baton, name: string, ttl: number) {
  return {
    lease: await client.mutex(name, { ttl }).acquire({ autoExtend: true }),
    leadership: await client.election(`${name}/leader`, { ttl }).campaign(),
    set: await client.multi([`${name}/m1`, `${name}/m2`], { ttl }).acquire(),
  }
}

/** Resolves once the process is in the stopped state ('T' in /proc/<pid>/stat). */
async function stopped(pid: number): Promise<void> {
  for (;;) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The state follows the command name, which is in parentheses and may hold spaces.
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return
    await sleep(5)
  }
}
