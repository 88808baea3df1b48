/**
 * A renewal whose answer is read after the lease lapsed (the process stood
 * still past it: SIGSTOP, a GC, a long synchronous step) must not resolve as
 * renewed: the deadline it confirms counts from when the call was sent, so it
 * is already past. Found by `baton verify --workload rwlock` under load: an
 * extend sent as a worker was stopped resolved after the resume, before the
 * loss timer ran, while a writer already held the name. Runs on the embedded
 * store with its real driver; only when the answer is read is arranged.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { monotonicNow } from '../../src/core/clock.js'

const busy = (ms: number) => { const until = monotonicNow() + ms; while (monotonicNow() < until) { /* the loop stands still */ } }

describe('extend() read after a pause', () => {
  for (const failing of [false, true]) {
    it(`rejects with LEASE_LOST when the lease lapsed before its answer was read (${failing ? 'the store call failed' : 'the store renewed it'})`, async () => {
      const baton = await connect('memory://extend-after-lapse')
      const ttl = 200
      const lease = await baton.mutex('pause', { ttl }).acquire()
      let readAnswer!: () => void
      const answerRead = new Promise<void>((resolve) => (readAnswer = resolve))
      const extend = baton.driver.extend.bind(baton.driver)
      baton.driver.extend = async (holds, ttlMs) => {
        const answer = await extend(holds, ttlMs)
        await answerRead
        if (failing) throw Object.assign(new Error('the connection dropped'), { code: 'BACKEND_UNAVAILABLE' })
        return answer
      }
      const outcome = lease.extend().then(() => 'renewed', (error: { code?: string }) => error.code)
      await new Promise<void>((resolve) => {
        // Two turns of one phase: the loop stands still past the renewed
        // deadline, then the answer is read, before any timer (the loss timer) runs.
        setImmediate(() => busy(ttl + 50))
        setImmediate(() => { readAnswer(); resolve() })
      })
      assert.equal(await outcome, 'LEASE_LOST')
      assert.equal(lease.held, false)
      assert.equal(lease.signal.aborted, true)
      await baton.close()
    })
  }

  it('resolves when the answer is read in time', async () => {
    const baton = await connect('memory://extend-after-lapse')
    const lease = await baton.mutex('in-time', { ttl: 5000 }).acquire()
    await lease.extend()
    assert.ok(lease.held && lease.remainingMs() > 0)
    await lease.release()
    await baton.close()
  })
})
