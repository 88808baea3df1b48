/**
 * Bounded state on the embedded store: nothing stays behind for a name nobody
 * holds or awaits once `?fenceTtl=` has passed (memory drops it as soon as the
 * name is idle, the window is the most the contract allows), and tokens keep
 * increasing.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import type { AcquireRequest } from '../../src/core/driver.js'
import { newOwnerId } from '../../src/core/owner.js'
import { aborted, sleep } from '../conformance/context.js'
import { ms } from '../harness/timing.js'

/** Entries in every map and set the driver keeps (white box: their size is what this test is about). */
function entriesKept(driver: object): number {
  return Object.values(driver).reduce<number>((sum, value) => sum + (value instanceof Map || value instanceof Set ? value.size : 0), 0)
}

describe('memory store: bounded state', () => {
  it('idle names cost nothing after fenceTtl, and tokens still strictly increase', async () => {
    const window = ms(300)
    const baton = await connect(`memory://bounded?fenceTtl=${window}`)
    const first = new Map<string, bigint>()
    for (let i = 0; i < 1000; i++) {
      const lease = await baton.mutex(`bounded/${i}`).acquire()
      first.set(`bounded/${i}`, lease.token)
      await lease.release()
    }
    // An expired hold with a lock delay, a waiter that gave up, and a waiter
    // whose process died (its line entry is never refreshed nor removed).
    const expiring = await baton.semaphore('bounded/delay', { permits: 2, ttl: ms(100), lockDelay: ms(100) }).acquire()
    const holder = await baton.mutex('bounded/line').acquire({ autoExtend: true })
    await assert.rejects(baton.mutex('bounded/line').acquire({ wait: ms(50) }))
    const dead: AcquireRequest = {
      name: 'bounded/dead', kind: 'mutex', mode: 'exclusive', fair: true, permits: 1, lockDelayMs: 0,
      owner: newOwnerId('gone'), ttlMs: 60_000, enqueue: true, queueTtlMs: ms(50), retry: false,
    }
    const blocker = await baton.mutex('bounded/dead', { fair: true }).acquire()
    assert.equal((await baton.driver.acquire(dead)).status, 'busy')
    await sleep(ms(100))
    await blocker.release() // hands over to nobody: the dead entry went stale
    await holder.release()
    await aborted(expiring.signal)

    await sleep(2 * window + ms(300))
    assert.equal(entriesKept(baton.driver), 0, 'no per-name state is left')
    for (const [name, token] of [...first].slice(0, 50)) {
      const again = await baton.mutex(name).acquire()
      assert.ok(again.token > token, `${name}: ${again.token} > ${token}`)
      await again.release()
    }
    await baton.close()
  })

  it('fenceTtl in the URL is checked', async () => {
    await assert.rejects(connect('memory://bounded-bad?fenceTtl=soon'), (e) => (e as { code?: string }).code === 'INVALID_ARGUMENT')
  })
})
