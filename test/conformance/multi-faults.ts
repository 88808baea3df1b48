/**
 * A multi-lock under the fault layer's faults (issue 20: "a multi-lock whose
 * store dies half-way"), on every networked store. The faults are the ones of
 * faults.ts (a partition through the harness's TCP proxy, a reset connection,
 * the server killed and started again), and so are the per-store declared
 * exceptions and known defects (FaultSupport), so a store's limits are
 * declared once for its single locks and its sets alike.
 *
 * The properties: a set that was being taken when the store went away ends
 * with a typed error (or, where the store kept everything, with the whole
 * set), and leaves nothing held: within its ttl every name is free for
 * others. A held set that loses one part fires its one signal before anyone
 * else is let in, and lets the other parts go at once (not at their ttl).
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { isBatonError, type Baton, type BatonError } from '../../src/index.js'
import type { MultiLease } from '../../src/primitives/multi.js'
import type { WaitEvent } from '../../src/core/events.js'
import { ms } from '../harness/timing.js'
import { faultRig } from './fault-rig.js'
import { aborted, nextEvent, sleep, withTimeout, type SuiteContext } from './context.js'

/** As in faults.ts: every reply held this long, then every connection cut. */
const PARTITION_MS = 2000

/** What a fault may end a waiting multi acquire with: the store's, or the loss of a part it had taken. */
const FAULT_CODES = new Set(['BACKEND_UNAVAILABLE', 'QUORUM_NOT_REACHED', 'LEASE_LOST'])

export function multiLockFaults(ctx: SuiteContext): void {
  describe('multi-lock under faults', () => {
    const rig = faultRig(ctx)
    const { proxiedClient, applies } = rig

    /** `client` takes `names` (the one who held them is a holder nobody renews): everything was let go in time. */
    async function allFree(client: Baton, names: readonly string[], withinMs: number): Promise<void> {
      // The store may still be on its way back after a restart: retry what says so.
      const deadline = performance.now() + withinMs + ms(30_000)
      for (;;) {
        const got = await client.multi(names).acquire({ wait: withinMs }).catch((error: unknown) => error)
        if (!(got instanceof Error)) return (got as MultiLease).release()
        if (!isBatonError(got) || !got.retryable || got.code === 'LOCK_TIMEOUT' || performance.now() > deadline) {
          throw new Error(`a name stayed blocked after the faulted set (its ttl was ${withinMs} ms): ${String(got)}`)
        }
      }
    }

    /** `read` retried while the store says it is not reachable yet (a server just restarted, a session re-established). */
    async function whileComingBack<T>(read: () => Promise<T>): Promise<T> {
      const deadline = performance.now() + ms(30_000)
      for (;;) {
        try {
          return await read()
        } catch (error) {
          if (!isBatonError(error) || !error.retryable || performance.now() > deadline) throw error
          await sleep(ms(100))
        }
      }
    }

    /** What a faulted multi acquire ended with: a typed error, or (the store kept everything) the whole set, really held. */
    async function checkOutcome(t: TestContext, outcome: unknown, names: readonly string[], other: Baton, ttlMs: number): Promise<void> {
      t.diagnostic(`the faulted acquire ended with: ${outcome instanceof Error ? `${(outcome as BatonError).code} ${outcome.message}` : 'the whole set'}`)
      if (outcome instanceof Error) {
        ctx.assertClean('an error under fault', outcome)
        assert.ok(isBatonError(outcome) && FAULT_CODES.has(outcome.code), `a fault gives a typed store error or the part's loss: ${String(outcome)}`)
        return
      }
      const lease = outcome as MultiLease
      // A store that forgot the holds tells the holder at its next renewal (declared restart exceptions): give it one.
      await sleep(ttlMs)
      if (!lease.signal.aborted) {
        for (const name of names) {
          const view = await whileComingBack(() => other.inspect(name))
          assert.equal(view?.holders[0]?.owner, lease.leases.find((part) => part.name === name)?.owner, `${name} is in the store, held by the set`)
        }
      }
      await lease.release()
    }

    it('the store unreachable half-way through a multi acquire (2 s partition): a typed error, and nothing left held', async (t) => {
      if (!applies(t, 'partition').run) return
      const [a, b] = [await proxiedClient(), await ctx.client()]
      const names = ['1', '2', '3'].map((n) => ctx.name(`multi-fault-partition-${n}`))
      const ttl = ms(1500)
      const blocker = await b.mutex(names[2]!, { ttl: '30s' }).acquire()
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === names[2])
      const attempt = a.multi(names, { ttl }).acquire({ wait: ms(30_000) }).catch((error: unknown) => error as Error)
      await queued // the set holds the first two names and waits in line for the third
      for (const name of names.slice(0, 2)) assert.equal((await b.inspect(name))?.holders.length, 1, `${name} taken before the fault`)
      const partition = Promise.all(rig.proxies.map((p) => p.partition(ms(PARTITION_MS))))
      const outcome = await withTimeout(attempt, ms(30_000), 'the multi acquire to end')
      await partition
      assert.ok(outcome instanceof Error, 'the third name stayed held by another: the set can not have been granted')
      await checkOutcome(t, outcome, names, b, ttl)
      await blocker.release()
      await allFree(b, names, ttl + ms(4000))
    })

    it('the store server restarted (kill -9) while a multi acquire holds some names and waits for the rest: nothing left held', async (t) => {
      if (!applies(t, 'restart', false).run) return
      const [a, b] = [await ctx.client(), await ctx.client()]
      const names = ['1', '2', '3'].map((n) => ctx.name(`multi-fault-restart-${n}`))
      const ttl = ms(1500)
      const blocker = await b.mutex(names[2]!, { ttl: ms(3000) }).acquire({ autoExtend: true })
      const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === names[2])
      const attempt = a.multi(names, { ttl }).acquire({ wait: ms(40_000) }).catch((error: unknown) => error as Error)
      await queued
      await ctx.harness.faults!.restart()
      await blocker.release().catch(() => {}) // forgotten by a store that restarted empty, or let go now
      const outcome = await withTimeout(attempt, ms(45_000), 'the multi acquire to end')
      await checkOutcome(t, outcome, names, b, ttl)
      await allFree(b, names, ttl + ms(4000))
    })

    it('a 2 s partition of a set\'s holder: its one signal fires before anyone else gets any of its names', async (t) => {
      const { run, exception } = applies(t, 'partition-holder')
      if (!run) return
      const [a, b] = [await proxiedClient(), await ctx.client()]
      const names = [ctx.name('multi-fault-holder-a'), ctx.name('multi-fault-holder-b')]
      const lease = await a.multi(names, { ttl: ms(1200) }).acquire()
      const partition = Promise.all(rig.proxies.map((p) => p.partition(ms(PARTITION_MS))))
      const next = await b.multi(names).acquire({ wait: ms(15_000) })
      if (exception) await withTimeout(aborted(lease.signal, ms(4200)), ms(4200), `the loss signal within a renewal period (${exception})`)
      else assert.ok(lease.signal.aborted, 'another client was let in while the set\'s holder had not been told of its loss')
      for (const name of names) assert.ok(next.tokens.get(name)! > lease.tokens.get(name)!, `${name}: the new token exceeds the old`)
      await partition
      await next.release()
    })

    it('one part of a held set taken away while its loss notice is cut off: the signal fires and the other parts are let go at once', async (t) => {
      const { run, exception } = applies(t, 'loss-reset')
      if (!run) return
      const [a, b, admin] = [await proxiedClient(), await ctx.client(), await ctx.client()]
      const [kept, taken] = [ctx.name('multi-fault-loss-a'), ctx.name('multi-fault-loss-b')]
      // Renewed every 10 s: parts let go only at their ttl (30 s) would keep `kept` from b past its wait.
      const lease = await a.multi([kept, taken], { ttl: '30s' }).acquire()
      let dropped = false
      for (const proxy of rig.proxies) proxy.onReply(() => (dropped ? 'pass' : ((dropped = true), 'drop')))
      assert.equal(await admin.forceRelease(taken), true)
      const reason = await aborted(lease.signal, exception ? ms(15_000) : ms(6000))
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
      assert.equal((reason as BatonError).lockName, taken)
      ctx.assertClean('a loss reason', reason)
      const next = await b.mutex(kept).acquire({ wait: ms(10_000) })
      assert.ok(next.token > lease.tokens.get(kept)!)
      await next.release()
      await lease.release()
    })
  })
}
