/** --tokens FILE: 401 without a valid bearer token, 403 outside its prefixes or rights. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { connect, isBatonError } from '../../src/index.js'
import { bearer, call, lockPath } from './client.js'
import { unhurried } from '../harness/clients.js'

const ADMIN = 'admin-token-0123456789abcdef'
const ORDERS = 'orders-lock-token-0123456789'
const READER = 'read-only-token-0123456789ab'

let server: BatonServer
let base: string

before(async () => {
  server = await startBatonServer(['--tokens', tokensFile([
    { token: ADMIN, rights: ['admin'] },
    { token: ORDERS, prefixes: ['orders/'] },
    { token: READER, rights: ['read'] },
  ])])
  base = server.base
})
after(() => server.stop())

describe('baton serve --tokens', () => {
  it('401 without a token or with a wrong one; probes stay open', async () => {
    const none = await call(base, 'POST', lockPath('orders/1', '/acquire'), {})
    assert.equal(none.status, 401)
    assert.equal(none.body.error.code, 'UNAUTHORIZED')
    assert.equal(none.headers.get('www-authenticate'), 'Bearer')
    for (const header of [`Bearer ${ADMIN}x`, `Bearer ${ADMIN.slice(1)}`, `Basic ${ADMIN}`, 'Bearer', ADMIN]) {
      const wrong = await call(base, 'GET', '/v1/locks', undefined, { authorization: header })
      assert.equal(wrong.status, 401, header)
      assert.ok(!JSON.stringify(wrong.body).includes(ADMIN.slice(4)), 'the token is never echoed')
    }
    assert.equal((await call(base, 'GET', '/healthz')).status, 200)
    assert.equal((await call(base, 'GET', '/readyz')).status, 200)
    assert.equal((await call(base, 'GET', '/openapi.json')).status, 200)
    assert.equal((await call(base, 'GET', '/metrics')).status, 401)
  })

  it('lock right within its prefixes only', async () => {
    const lease = await call(base, 'POST', lockPath('orders/1', '/acquire'), {}, bearer(ORDERS))
    assert.equal(lease.status, 200)
    const outside = await call(base, 'POST', lockPath('users/1', '/acquire'), {}, bearer(ORDERS))
    assert.equal(outside.status, 403)
    assert.equal(outside.body.error.code, 'FORBIDDEN')
    assert.equal((await call(base, 'GET', lockPath('orders/1'), undefined, bearer(ORDERS))).status, 200)
    assert.equal((await call(base, 'GET', lockPath('users/1'), undefined, bearer(ORDERS))).status, 403)
    assert.equal((await call(base, 'GET', '/v1/events?prefix=users/', undefined, bearer(ORDERS))).status, 403)
    assert.equal((await call(base, 'GET', '/metrics', undefined, bearer(ORDERS))).status, 403)
    assert.equal((await call(base, 'DELETE', lockPath('orders/1'), undefined, bearer(ORDERS))).status, 403, 'forced release is admin only')
    const extended = await call(base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, {}, bearer(ORDERS))
    assert.equal(extended.status, 200)
    assert.equal((await call(base, 'DELETE', `/v1/leases/${lease.body.leaseId}`, undefined, bearer(ORDERS))).body.released, true)
  })

  it('read right: inspect, list and events, but no locking', async () => {
    const held = await call(base, 'POST', lockPath('users/7', '/acquire'), {}, bearer(ADMIN))
    assert.equal(held.status, 200)
    assert.equal((await call(base, 'GET', lockPath('users/7'), undefined, bearer(READER))).status, 200)
    assert.equal((await call(base, 'GET', '/metrics', undefined, bearer(READER))).status, 200)
    const refused = await call(base, 'POST', lockPath('users/8', '/acquire'), {}, bearer(READER))
    assert.equal(refused.status, 403)
    assert.equal((await call(base, 'DELETE', `/v1/leases/${held.body.leaseId}`, undefined, bearer(READER))).status, 403)
    const listed = await call(base, 'GET', '/v1/locks', undefined, bearer(ORDERS))
    assert.deepEqual(listed.body.locks, [], 'a prefix-limited token lists only its names')
    const batch = await call(base, 'POST', '/v1/leases/extend', { leases: [held.body.leaseId] }, bearer(ORDERS))
    assert.equal(batch.body.results[0].status, 'forbidden')
  })

  it('admin: forced release', async () => {
    const held = await call(base, 'POST', lockPath('orders/9', '/acquire'), {}, bearer(ORDERS))
    assert.equal(held.status, 200)
    assert.deepEqual((await call(base, 'DELETE', lockPath('orders/9'), undefined, bearer(ADMIN))).body, { released: true })
    assert.equal((await call(base, 'POST', `/v1/leases/${held.body.leaseId}/extend`, {}, bearer(ORDERS))).status, 410)
  })

  it('the http:// store sends its token from the URL; a wrong one is UNAUTHORIZED, not a store outage', async () => {
    const url = new URL(base)
    const client = await connect(`http://:${ORDERS}@${url.host}`, unhurried())
    const lease = await client.mutex('orders/from-driver').acquire({ wait: '5s' })
    assert.equal((await client.inspect('orders/from-driver'))?.holders[0]?.owner, lease.owner)
    await assert.rejects(client.mutex('users/from-driver').acquire({ wait: '1s' }), (e) => isBatonError(e, 'FORBIDDEN'))
    await lease.release()
    await client.close()
    await assert.rejects(connect(`http://:wrong-token-0123456789@${url.host}`), (e) => isBatonError(e, 'UNAUTHORIZED'))
  })
})
