/** DELETE /v1/waits/{waitId} needs the lock right on the waiting name; the victim is told its wait was cancelled (issue 16, item 12). */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { bearer, call, lockPath } from './client.js'

const A_LOCKER = 'a-locker-token-0123456789ab'
const Z_READER = 'z-reader-token-0123456789ab'
const Z_LOCKER = 'z-locker-token-0123456789ab'

let server: BatonServer
before(async () => {
  server = await startBatonServer(['--tokens', tokensFile([
    { token: A_LOCKER, prefixes: ['a/'] }, { token: Z_READER, prefixes: ['z/'], rights: ['read'] }, { token: Z_LOCKER, prefixes: ['z/'] },
  ])])
})
after(() => server.stop())

describe('DELETE /v1/waits/{waitId}', () => {
  it('403 for a token without the lock right on the name; the owner\'s cancel answers the waiter 409 ABORTED, not 503', async () => {
    const base = server.base
    const name = `a/wait/${Math.random().toString(36).slice(2)}`
    const holder = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '60s' }, bearer(A_LOCKER))
    const waitId = `w${Math.random().toString(36).slice(2)}`.padEnd(24, 'w')
    const waiting = call(base, 'POST', lockPath(name, '/acquire'), { wait: '30s', waitId }, bearer(A_LOCKER))
    const inLine = async () => (await call(base, 'GET', lockPath(name), undefined, bearer(A_LOCKER))).body.waiters?.length === 1
    const deadline = Date.now() + ms(10_000)
    while (!(await inLine())) {
      assert.ok(Date.now() < deadline, 'the waiter never got in line')
      await new Promise((r) => setTimeout(r, 20))
    }
    for (const token of [Z_READER, Z_LOCKER]) {
      const foreign = await call(base, 'DELETE', `/v1/waits/${waitId}`, undefined, bearer(token))
      assert.equal(foreign.status, 403, `${token}: ${JSON.stringify(foreign.body)}`)
    }
    assert.ok(await inLine(), 'a refused cancel leaves the waiter in line')
    const own = await call(base, 'DELETE', `/v1/waits/${waitId}`, undefined, bearer(A_LOCKER))
    assert.equal(own.status, 204)
    const answer = await waiting
    assert.equal(answer.status, 409, JSON.stringify(answer.body))
    assert.equal(answer.body.error.code, 'ABORTED')
    assert.match(answer.body.error.message, /cancelled/)
    await call(base, 'DELETE', `/v1/leases/${holder.body.leaseId}`, undefined, bearer(A_LOCKER))
  })
})
