/**
 * What the waiter's safety re-attempts cost on the paths that matter: an
 * uncontended acquire and an ordinary hand-over to a waiter already in line
 * must each take exactly ONE driver.acquire call. (A 'granted' wake-up that
 * races the waiter's own attempt is confirmed by one more, idempotent,
 * attempt; that case is counted and printed, not asserted.)
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Baton } from '../../src/index.js'

function countAcquires(baton: Baton): { calls: number } {
  const counter = { calls: 0 }
  const driver = baton.driver
  const original = driver.acquire.bind(driver)
  driver.acquire = async (request) => { counter.calls++; return original(request) }
  return counter
}

const turns = async (n: number) => { for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve)) }

describe('waiter: driver round trips per acquire (memory://)', () => {
  it('one call uncontended, one call per hand-over to a waiter in line', async () => {
    const holderSide = await connect('memory://handover-cost')
    const waiterSide = await connect('memory://handover-cost')
    try {
      const waiterCalls = countAcquires(waiterSide)
      const free = await waiterSide.mutex('cost/free').acquire()
      assert.equal(waiterCalls.calls, 1, 'uncontended acquire')
      await free.release()
      for (let round = 0; round < 20; round++) {
        const held = await holderSide.mutex('cost/handover').acquire()
        const before: number = waiterCalls.calls
        const waiting = waiterSide.mutex('cost/handover').acquire({ wait: '30s' })
        while (waiterCalls.calls === before) await turns(1)
        await turns(5) // its busy answer is in: it waits in line
        await held.release()
        const lease = await waiting
        assert.equal(waiterCalls.calls - before, 1, `round ${round}: the hand-over took no extra attempt`)
        assert.ok(lease.token > held.token)
        await lease.release()
      }
    } finally {
      await holderSide.close()
      await waiterSide.close()
    }
  })

  it('counts (does not assert) the attempts when the release races the waiter\'s own attempt', async () => {
    const holderSide = await connect('memory://handover-race')
    const waiterSide = await connect('memory://handover-race')
    try {
      const waiterCalls = countAcquires(waiterSide)
      let extra = 0
      for (let round = 0; round < 20; round++) {
        const held = await holderSide.mutex('cost/race').acquire()
        const before: number = waiterCalls.calls
        const waiting = waiterSide.mutex('cost/race').acquire({ wait: '30s' })
        while (waiterCalls.calls === before) await Promise.resolve()
        await held.release()
        const lease = await waiting
        extra += waiterCalls.calls - before - 1
        await lease.release()
      }
      console.log(`# a release racing the waiter's attempt: ${extra} extra driver.acquire call(s) over 20 hand-overs`)
    } finally {
      await holderSide.close()
      await waiterSide.close()
    }
  })

  it('a grant read after the loop stalled past its ttl is neither handed out nor re-asked in a loop', async () => {
    const baton = await connect('memory://stalled-grant')
    try {
      const calls = countAcquires(baton)
      const pending = baton.mutex('cost/stalled', { ttl: '200ms' }).acquire({ wait: '3s' })
      const until = Date.now() + 400
      while (Date.now() < until) { /* the event loop stands still past the ttl, the answer waiting */ }
      const outcome = await pending.catch((error: unknown) => error as Error)
      assert.ok(!(outcome instanceof Error), `a fresh hold was taken, got ${String(outcome)} after ${calls.calls} driver.acquire calls`)
      assert.ok(calls.calls <= 3, `${calls.calls} driver.acquire calls`)
      assert.equal(outcome.signal.aborted, false)
      await outcome.release()
    } finally {
      await baton.close()
    }
  })
})
