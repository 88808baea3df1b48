/**
 * The embedded store with --data-dir across kill -9: tokens keep increasing,
 * and the restarted server grants nothing (and /readyz says so) until every
 * lease it could have granted before has run out.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { startBatonServer, tempDir, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'

let server: BatonServer | undefined
after(() => server?.stop())

describe('baton serve --data-dir: restart after kill -9', () => {
  it('tokens keep increasing; grants wait out the old leases; /readyz follows', async () => {
    const dir = tempDir('data')
    server = await startBatonServer(['--data-dir', dir])
    const base = server.base
    let last = 0n
    for (let i = 0; i < 5; i++) {
      const lease = await call(base, 'POST', lockPath(`restart/${i}`, '/acquire'), { ttl: ms(6000) })
      assert.equal(lease.status, 200)
      assert.ok(BigInt(lease.body.token) > last)
      last = BigInt(lease.body.token)
    }
    const state = JSON.parse(readFileSync(join(dir, 'baton-state.json'), 'utf8'))
    assert.ok(BigInt(state.tokensReserved) >= last, 'the high-water mark is on disk before the grant is answered')

    await server.restart() // SIGKILL, then the same flags
    const ready = await call(base, 'GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.match(ready.body.reason, /restarted/)
    const refused = await call(base, 'POST', lockPath('restart/0', '/acquire'), {})
    assert.equal(refused.status, 503)
    assert.equal(refused.body.error.code, 'BACKEND_UNAVAILABLE')
    assert.ok(Number(refused.headers.get('retry-after')) >= 1)

    // Ready again once the longest old lease has surely ended.
    const deadline = Date.now() + ms(30_000)
    while ((await call(base, 'GET', '/readyz')).status !== 200) {
      assert.ok(Date.now() < deadline, '/readyz turned ready')
      await new Promise((r) => setTimeout(r, 100))
    }
    const after = await call(base, 'POST', lockPath('restart/0', '/acquire'), {})
    assert.equal(after.status, 200)
    assert.ok(BigInt(after.body.token) > last, `token ${after.body.token} > ${last} after the restart`)
  })
})
