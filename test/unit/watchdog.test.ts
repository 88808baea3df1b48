/**
 * The watchdog is one loop per client: holds that fall due together are
 * renewed in one driver call, and renewals stop when a hold is released.
 * Runs on the embedded store, with the real driver instrumented (not mocked).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect, type Lease } from '../../src/index.js'
import { ms } from '../harness/timing.js'

describe('watchdog', () => {
  it('renews due holds in one batch and stops after release', async () => {
    const baton = await connect('memory://watchdog')
    const batches: number[] = []
    const extend = baton.driver.extend.bind(baton.driver)
    baton.driver.extend = (holds, ttlMs) => {
      batches.push(holds.length)
      return extend(holds, ttlMs)
    }
    const leases: Lease[] = await Promise.all(
      Array.from({ length: 20 }, (_, i) => baton.mutex(`watchdog/${i}`, { ttl: ms(300) }).acquire({ autoExtend: true })),
    )
    await new Promise((r) => setTimeout(r, ms(1000)))
    assert.ok(leases.every((l) => !l.signal.aborted), 'every hold outlived its ttl')
    assert.ok(Math.max(...batches) >= 10, `holds due together share a batch (batch sizes ${batches.join(',')})`)
    assert.ok(batches.length < 20 * 3, `one call per batch, not per hold (${batches.length} calls)`)

    await Promise.all(leases.map((l) => l.release()))
    const after = batches.length
    await new Promise((r) => setTimeout(r, ms(400)))
    assert.equal(batches.length, after, 'no renewals after release')
    await baton.close()
  })
})
