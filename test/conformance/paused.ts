import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import { describe, it } from 'node:test'
import { sleep, withTimeout, type SuiteContext } from './context.js'
import { elects, holdAll, LAPSED, LOOKS, type Look } from './lapse.js'
import { ms } from '../harness/timing.js'

/**
 * A client that stood still past its lease (SIGSTOP, a GC pause, a long
 * synchronous step) must never see the lapsed hold as held: `held` and
 * `signal` follow the monotonic deadline the moment they are read, even when
 * the first code to run after the pause is a timer that fell due before the
 * client's own loss timer. Each look is made on holds of its own.
 */
export function pausedHolders(ctx: SuiteContext): void {
  describe('a paused holder', () => {
    it('frozen (SIGSTOP) past its lease while another takes over: its first looks say lapsed, and a renewal in flight says lost (lease, leadership, multi set)', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process: the synchronous-step test covers it')
      const stat = await readFile('/proc/self/stat', 'utf8').catch(() => undefined)
      if (stat === undefined) return t.skip('no /proc to see that the worker stopped')
      const name = ctx.name('frozen')
      const frozen = ctx.worker({ task: 'freeze', name, ttl: ms(1000) })
      await frozen.line('stopping', ms(30_000))
      await withTimeout(stopped(frozen.child.pid!), ms(15_000), 'the worker to stop')
      const other = await ctx.client()
      // A bound, not a measure: stores with a lease floor (etcd, ZooKeeper) let go later than the ttl.
      const wait = ms(40_000)
      const taken = []
      for (const when of [...LOOKS, 'extend']) {
        taken.push(
          await other.mutex(`${name}/${when}`).acquire({ wait }),
          ...(elects(other) ? [await other.election(`${name}/${when}/leader`).campaign({ wait })] : []),
          await other.multi([`${name}/${when}/m1`, `${name}/${when}/m2`]).acquire({ wait }),
        )
      }
      frozen.child.kill('SIGCONT')
      for (const when of LOOKS) {
        const prefix = `look ${when} `
        assertLapsed(when, JSON.parse((await frozen.line(prefix)).slice(prefix.length)) as Look[])
      }
      // Renewals sent as it stopped, answered (by the store, or by the client
      // after the pause): none may say it renewed a hold that lapsed.
      const renewed = JSON.parse((await frozen.line('renewed ')).slice('renewed '.length)) as { what: string; outcome: string }[]
      assert.ok(renewed.length >= 2, 'a lease and a multi set (and a leadership where the store offers elections)')
      for (const { what, outcome } of renewed) assert.equal(outcome, 'LEASE_LOST', `the ${what}'s renewal read after the pause said ${outcome}`)
      for (const hold of taken) await hold.release()
    })

    it('a synchronous step longer than the lease: the first looks after it say lapsed (lease, leadership, multi set)', async () => {
      const client = await ctx.client()
      const name = ctx.name('blocked')
      const holds = Object.fromEntries(await Promise.all(LOOKS.map(async (when) => [when, await holdAll(client, `${name}/${when}`, ms(500))] as const)))
      const seen = new Map<string, Look[]>()
      // Both looks awaited: which of an overdue timer and an immediate runs first depends on where the loop stands.
      const lookedAtTimer = Promise.all([
        new Promise<void>((resolve) => setTimeout(() => { seen.set('timer', holds.timer!.look()); resolve() }, 1)),
        new Promise<void>((resolve) => setImmediate(() => { seen.set('immediate', holds.immediate!.look()); resolve() })),
      ])
      // Block the event loop until every deadline has passed (by the same monotonic clock).
      const until = performance.now() + Math.max(...Object.values(holds).map((h) => h.remainingMs())) + 1
      while (performance.now() < until) { /* a long synchronous step */ }
      seen.set('sync', holds.sync!.look())
      await lookedAtTimer
      assert.equal(seen.size, LOOKS.length)
      for (const [when, looks] of seen) assertLapsed(when, looks)
      for (const held of Object.values(holds)) {
        await held.set.release()
        await held.leadership?.resign()
        await held.lease.release()
      }
    })
  })
}

function assertLapsed(when: string, looks: Look[]): void {
  assert.ok(looks.length >= 2, `${when}: a lease and a multi set (and a leadership where the store offers elections)`)
  for (const look of looks) assert.deepEqual(look, { what: look.what, ...LAPSED }, `${when}: the ${look.what} looks held after its lease lapsed`)
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
