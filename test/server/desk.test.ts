/** The server's lease desk holds no records once nothing is held, however quiet rounds and renewals interleave. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createPrivateMemoryDriver } from '../../src/drivers/memory/index.js'
import { EventHub } from '../../src/server/events.js'
import { LeaseDesk } from '../../src/server/leases.js'
import type { HoldRef } from '../../src/core/driver.js'
import { ms } from '../harness/timing.js'

const sleep = (n: number) => new Promise((resolve) => setTimeout(resolve, n))

describe('lease desk', () => {
  it('a quiet server with 0 leases holds 0 records, round after round', async () => {
    const driver = createPrivateMemoryDriver()
    const desk = new LeaseDesk(driver, new EventHub('memory'), 'desktest')
    let n = 0
    const grant = async (ttlMs: number): Promise<HoldRef> => {
      const spec = { name: `desk/${n}`, kind: 'mutex', mode: 'exclusive', fair: false, permits: 1, lockDelayMs: 0 } as const
      const owner = `desktest.${n++}`
      const result = await driver.acquire({ ...spec, owner, ttlMs, enqueue: false, queueTtlMs: 0, retry: false })
      assert.equal(result.status, 'granted')
      const ref = { ...spec, owner, token: (result as { token: bigint }).token }
      desk.granted(ref, ttlMs, 0)
      return ref
    }
    for (let round = 0; round < 3; round++) {
      const refs = await Promise.all(Array.from({ length: 1000 }, () => grant(ms(200))))
      await desk.extend(refs, ms(300)) // renewals file each lease again, in a later slot
      for (const ref of refs) await desk.release(ref)
      assert.equal(desk.size, 0)
      await sleep(ms(600)) // quiet: every slot filed above has passed
      const one = await grant(ms(60_000))
      assert.ok(desk.records <= 2, `round ${round}: ${desk.records} records with 1 lease held`)
      await desk.release(one)
      assert.equal(desk.records, 0, `round ${round}: no records with nothing held`)
    }
    desk.close()
    await driver.close()
  })
})
