/** The election routes as plain HTTP (curl-level): campaign long-poll, leader, proclaim, resign, the leader event stream. */
import assert from 'node:assert/strict'
import { request, type IncomingMessage } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { call } from './client.js'
import { parseSse, readUntil } from './in-process.js'

let server: BatonServer
before(async () => {
  server = await startBatonServer([])
})
after(() => server?.stop())

const path = (name: string, suffix = '') => `/v1/elections/${encodeURIComponent(name)}${suffix}`

function openLeaderEvents(base: string, name: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path(name, '/events')}`, { headers: { accept: 'text/event-stream' } }, resolve)
    req.on('error', reject)
    req.end()
  })
}

describe('election routes', () => {
  it('campaign, leader, proclaim, resign (hand-over to the waiting campaign), with every change on the event stream', async () => {
    const base = server.base
    const name = 'elections/routes'
    assert.deepEqual((await call(base, 'GET', path(name))).body, { leader: null })
    const events = await openLeaderEvents(base, name)
    assert.equal(events.statusCode, 200)
    let text = await readUntil(events, (t) => parseSse(t).length >= 1)

    const first = await call(base, 'POST', path(name, '/campaign'), { value: 'host-a:8080', ttl: '30s' })
    assert.equal(first.status, 200)
    const leader = (await call(base, 'GET', path(name))).body.leader
    assert.equal(leader.value, 'host-a:8080')
    assert.equal(leader.token, first.body.token)
    assert.equal((await call(base, 'POST', path(name, '/campaign'), { value: 'host-b' })).status, 409, 'no wait: busy')

    text += await readUntil(events, (t) => (text + t).includes('host-a:8080'))
    const proclaimed = await call(base, 'POST', path(name, '/proclaim'), { leaseId: first.body.leaseId, value: 'host-a:9090' })
    assert.deepEqual(proclaimed.body, { proclaimed: true })
    assert.equal((await call(base, 'GET', path(name))).body.leader.value, 'host-a:9090')
    assert.equal((await call(base, 'GET', `/v1/locks/${encodeURIComponent(name)}`)).body.holders[0].value, 'host-a:9090', 'inspect shows the value')

    text += await readUntil(events, (t) => (text + t).includes('host-a:9090'))
    const second = call(base, 'POST', path(name, '/campaign'), { value: 'host-b', wait: '20s' })
    for (let i = 0; i < 200 && ((await call(base, 'GET', `/v1/locks/${encodeURIComponent(name)}`)).body.waiters?.length ?? 0) === 0; i++) {
      await new Promise((r) => setTimeout(r, 25))
    }
    assert.deepEqual((await call(base, 'POST', path(name, '/resign'), { leaseId: first.body.leaseId })).body, { released: true })
    const next = await second
    assert.equal(next.status, 200)
    assert.ok(BigInt(next.body.token) > BigInt(first.body.token))
    assert.equal((await call(base, 'POST', path(name, '/proclaim'), { leaseId: first.body.leaseId, value: 'x' })).status, 410, 'a resigned term can not proclaim')
    // Each change seen before the next is made: the stream may merge changes closer together than one read.
    text += await readUntil(events, (t) => (text + t).includes('host-b'))
    await call(base, 'POST', path(name, '/resign'), { leaseId: next.body.leaseId })

    text += await readUntil(events, (t) => parseSse(text + t).filter((e) => e.event === 'leader').length >= 5)
    events.destroy()
    const seen = parseSse(text).filter((e) => e.event === 'leader').map((e) => e.data.leader && e.data.leader.value)
    assert.deepEqual(seen.slice(0, 5), [null, 'host-a:8080', 'host-a:9090', 'host-b', null])
  })

  it('refuses bad input with 400 INVALID_ARGUMENT', async () => {
    const base = server.base
    const name = 'elections/bad'
    for (const body of [{ value: 42 }, { value: 'x'.repeat(4097) }, { value: 'é'.repeat(2049) }, { mode: 'read' }, { fair: false }, { value: 'a\0b' }, { value: 'ok', description: 'x\0forged' }]) {
      const answer = await call(base, 'POST', path(name, '/campaign'), body)
      assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 40))
      assert.equal(answer.body.error.code, 'INVALID_ARGUMENT')
    }
    const lease = await call(base, 'POST', path(name, '/campaign'), { value: 'ok' })
    const other = await call(base, 'POST', path('elections/other', '/campaign'), { value: 'ok' })
    const wrongName = await call(base, 'POST', path(name, '/proclaim'), { leaseId: other.body.leaseId, value: 'y' })
    assert.equal(wrongName.status, 400, 'a lease of another name')
    assert.equal((await call(base, 'POST', path(name, '/proclaim'), { value: 'y' })).status, 400, 'no lease named')
    await call(base, 'POST', path(name, '/resign'), { leaseId: lease.body.leaseId })
    await call(base, 'POST', path('elections/other', '/resign'), { leaseId: other.body.leaseId })
  })

  it('a description can not forge a leader value (Redis keeps "<description>\\0<value>"): NUL is refused', async () => {
    const base = server.base
    const name = 'elections/forged'
    const plain = await call(base, 'POST', `/v1/locks/${encodeURIComponent(name)}/acquire`, { description: 'worker\0evil-host:6666' })
    assert.equal(plain.status, 400, JSON.stringify(plain.body))
    assert.equal(plain.body.error.code, 'INVALID_ARGUMENT')
    assert.equal((await call(base, 'GET', path(name))).body.leader, null)
  })

  it('a shared hold (read, permit) is not a leadership: no value, no proclaim, so no second "leader"', async () => {
    const base = server.base
    const name = 'elections/shared'
    const lockPath = `/v1/locks/${encodeURIComponent(name)}/acquire`
    for (const body of [{ mode: 'read', value: 'host-a' }, { mode: 'permit', permits: 2, value: 'host-a' }]) {
      const answer = await call(base, 'POST', lockPath, body)
      assert.equal(answer.status, 400, body.mode)
      assert.equal(answer.body.error.code, 'INVALID_ARGUMENT')
    }
    const readers = [await call(base, 'POST', lockPath, { mode: 'read' }), await call(base, 'POST', lockPath, { mode: 'read' })]
    const proclaim = await call(base, 'POST', path(name, '/proclaim'), { leaseId: readers[1]!.body.leaseId, value: 'host-b' })
    assert.equal(proclaim.status, 400, 'a reader proclaims nothing')
    assert.equal(proclaim.body.error.code, 'INVALID_ARGUMENT')
    assert.equal((await call(base, 'GET', path(name))).body.leader, null, 'two readers hold the name: neither leads')
    for (const reader of readers) await call(base, 'DELETE', `/v1/leases/${reader.body.leaseId}`)
  })
})
