/**
 * A forced release that overtakes the answer of the attempt it ends: the
 * waiter asks again (the grant it heard of may be gone) and gets a new
 * grant of the freed name; the loss notice it already counted belongs to
 * the first grant and must not end the second one. Found by the conformance
 * case "a part lost while a later one is awaited" on postgres:// and
 * http-redis under load: the set failed with LEASE_LOST as it should, but
 * its first name stayed held (a fresh 10 s hold, nobody's) because the stale
 * notice ended the new hold in the client only. Runs on the embedded store
 * with its real driver; only when the attempt's answer is read is arranged.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'

describe('a loss notice that overtakes the grant it ends', () => {
  it('does not end the hold the next attempt gets: the lease is held, and the store shows it', async () => {
    const baton = await connect('memory://lost-before-grant')
    const other = await connect('memory://lost-before-grant')
    const name = 'overtaken'
    const acquire = baton.driver.acquire.bind(baton.driver)
    let attempts = 0
    baton.driver.acquire = async (request) => {
      const answer = await acquire(request)
      // The first grant is taken away by force before its answer is read: the notice arrives first.
      if (++attempts === 1 && answer.status === 'granted') await other.forceRelease(name)
      return answer
    }
    const lease = await baton.mutex(name, { ttl: '10s' }).acquire({ wait: '5s' })
    assert.equal(attempts, 2, 'the waiter asked again after the loss')
    assert.equal(lease.held, true, 'the new grant is held')
    const holders = (await other.inspect(name))?.holders ?? []
    assert.deepEqual(holders.map((h) => h.token), [lease.token], 'the store holds it for this lease')
    await lease.release()
    assert.equal(await other.inspect(name), null, 'released: nothing is left')
    await Promise.all([baton.close(), other.close()])
  })
})
