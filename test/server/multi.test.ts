/**
 * POST /v1/multi/acquire and /v1/multi/release (issue 20, several locks at
 * once over HTTP): all or none, one global order, long-poll and NDJSON like
 * the single acquire, parts renewed while the rest is awaited.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { LockServer } from '../../src/server/index.js'
import { startBatonServer } from '../harness/baton-server.js'
import { startRedis } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'
import { startInProcess } from './in-process.js'

let server: LockServer
let base: string
let shortPoll: { server: LockServer; base: string }
before(async () => {
  ({ server, base } = await startInProcess())
  shortPoll = await startInProcess({ pollMaxMs: ms(300) })
})
after(async () => {
  await server.close()
  await shortPoll.server.close()
})

const unique = (label: string) => `multi/${label}/${Math.random().toString(36).slice(2, 10)}`
const holdersOf = async (name: string, at = base): Promise<{ owner: string; token: string }[]> =>
  (await call(at, 'GET', lockPath(name))).body.holders ?? []
const sleep = (forMs: number) => new Promise((resolve) => setTimeout(resolve, forMs))

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(10_000)
  while (!(await check())) {
    assert.ok(Date.now() < deadline, what)
    await sleep(20)
  }
}

describe('POST /v1/multi/acquire', () => {
  it('grants every name, in byte order, each with its own lease and token; /v1/multi/release frees them all', async () => {
    const names = [unique('c'), unique('a'), unique('b')]
    const answer = await call(base, 'POST', '/v1/multi/acquire', { locks: names.map((name) => ({ name })), ttl: '30s' })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const leases = answer.body.leases as { leaseId: string; name: string; token: string; mode: string }[]
    assert.deepEqual(leases.map((l) => l.name), [...names].sort())
    for (const lease of leases) {
      assert.equal(lease.mode, 'exclusive')
      assert.deepEqual((await holdersOf(lease.name)).map((h) => h.token), [lease.token])
    }
    // Each part is an ordinary lease: renewed on its own.
    assert.equal((await call(base, 'POST', `/v1/leases/${leases[0]!.leaseId}/extend`, {})).status, 200)
    const released = await call(base, 'POST', '/v1/multi/release', { leases: leases.map((l) => l.leaseId) })
    assert.deepEqual(released.body, { released: [true, true, true] })
    for (const name of names) assert.equal((await call(base, 'GET', lockPath(name))).status, 404, `${name} is free`)
    const again = await call(base, 'POST', '/v1/multi/release', { leases: leases.map((l) => l.leaseId) })
    assert.deepEqual(again.body, { released: [false, false, false] }, 'releasing is idempotent')
  })

  it('all or none: a busy name answers 409 LOCK_TIMEOUT, at once or after `wait`, and nothing else stays held', async () => {
    const names = [unique('1'), unique('2'), unique('3')]
    const blocker = await call(base, 'POST', lockPath(names[1]!, '/acquire'), { ttl: '30s' })
    for (const wait of [undefined, '300ms']) {
      const answer = await call(base, 'POST', '/v1/multi/acquire', { locks: names.map((name) => ({ name })), ...(wait ? { wait } : {}) })
      assert.equal(answer.status, 409, JSON.stringify(answer.body))
      assert.equal(answer.body.error.code, 'LOCK_TIMEOUT')
      assert.match(answer.body.error.message, new RegExp(names[1]!))
      for (const name of [names[0]!, names[2]!]) assert.deepEqual(await holdersOf(name), [], `${name} is free (wait ${wait})`)
    }
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
  })

  it('long-polls: a set waiting for a held name is answered the moment it is released, its first parts renewed meanwhile', async () => {
    const [first, second] = [unique('poll-a'), unique('poll-b')]
    const blocker = await call(base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const ttl = ms(600)
    const waiting = call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: second }, { name: first }], ttl, wait: '20s' })
    await until('the set took its first name', async () => (await holdersOf(first)).length === 1)
    const [taken] = await holdersOf(first)
    await sleep(ttl * 3) // past the first part's ttl: only a renewal keeps it
    assert.deepEqual((await holdersOf(first)).map((h) => h.token), [taken!.token], 'the first part was renewed while the second was awaited')
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
    const answer = await waiting
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.deepEqual(answer.body.leases.map((l: { name: string }) => l.name), [first, second])
    assert.equal(answer.body.leases[0].token, taken!.token)
    await call(base, 'POST', '/v1/multi/release', { leases: answer.body.leases.map((l: { leaseId: string }) => l.leaseId) })
  })

  it('streams with Accept: application/x-ndjson: a waiting line naming the awaited name, then the grants', async () => {
    const [first, second] = [unique('nd-a'), unique('nd-b')]
    const blocker = await call(base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const response = await fetch(`${base}/v1/multi/acquire`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' },
      body: JSON.stringify({ locks: [{ name: first }, { name: second }], wait: '20s' }),
    })
    assert.equal(response.status, 200)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes('\n')) text += decoder.decode((await reader.read()).value, { stream: true })
    assert.deepEqual(JSON.parse(text.split('\n')[0]!), { state: 'waiting', name: second })
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true })
    const last = JSON.parse(text.trim().split('\n').at(-1)!)
    assert.deepEqual(last.leases.map((l: { name: string }) => l.name), [first, second])
    await call(base, 'POST', '/v1/multi/release', { leases: last.leases.map((l: { leaseId: string }) => l.leaseId) })
  })

  it('no deadlock: requests taking overlapping sets in opposite orders all finish, many rounds', async () => {
    const names = [unique('x'), unique('y'), unique('z')]
    let granted = 0
    await Promise.all([names, [...names].reverse(), [names[2]!, names[0]!]].map(async (set) => {
      for (let round = 0; round < 15; round++) {
        const answer = await call(base, 'POST', '/v1/multi/acquire', { locks: set.map((name) => ({ name })), wait: '30s' })
        assert.equal(answer.status, 200, JSON.stringify(answer.body))
        granted++
        await call(base, 'POST', '/v1/multi/release', { leases: answer.body.leases.map((l: { leaseId: string }) => l.leaseId) })
      }
    }))
    assert.equal(granted, 45)
  })

  it('read and write parts: readers share a name, a writer excludes', async () => {
    const [config, account] = [unique('config'), unique('account')]
    const one = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: config, mode: 'read' }, { name: account, mode: 'write' }] })
    assert.equal(one.status, 200, JSON.stringify(one.body))
    assert.deepEqual(one.body.leases.map((l: { mode: string }) => l.mode), [config < account ? 'read' : 'write', config < account ? 'write' : 'read'])
    const reader = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: config, mode: 'read' }] })
    assert.equal(reader.status, 200, 'a second reader of config is admitted')
    const writer = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: account, mode: 'read' }] })
    assert.equal(writer.status, 409, 'account is written')
    await call(base, 'POST', '/v1/multi/release', { leases: [...one.body.leases, ...reader.body.leases].map((l: { leaseId: string }) => l.leaseId) })
  })

  it('a part taken away (forced) while the rest is awaited: 410 LEASE_LOST, nothing held', async () => {
    const [first, second] = [unique('forced-a'), unique('forced-b')]
    const blocker = await call(base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const waiting = call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: first }, { name: second }], ttl: ms(900), wait: '30s' })
    await until('the set took its first name', async () => (await holdersOf(first)).length === 1)
    assert.equal((await call(base, 'DELETE', lockPath(first))).status, 200)
    const answer = await waiting
    assert.equal(answer.status, 410, JSON.stringify(answer.body))
    assert.equal(answer.body.error.code, 'LEASE_LOST')
    assert.match(answer.body.error.message, /nothing is held/)
    assert.deepEqual((await holdersOf(second)).map((h) => h.token), [blocker.body.token], 'the set left no trace on the name it awaited')
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
  })

  it('a part forced away and taken by another before its renewal, the set then completing: 410, never a second holder', async () => {
    const [first, second] = [unique('forced-long-a'), unique('forced-long-b')]
    const blocker = await call(base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const waiting = call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: first }, { name: second }], ttl: '30s', wait: '30s' })
    await until('the set took its first name', async () => (await holdersOf(first)).length === 1)
    assert.equal((await call(base, 'DELETE', lockPath(first))).status, 200)
    const other = await call(base, 'POST', lockPath(first, '/acquire'), { ttl: '30s' })
    assert.equal(other.status, 200)
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
    const answer = await waiting
    assert.equal(answer.status, 410, `the set must not claim "${first}", held by another: ${JSON.stringify(answer.body).slice(0, 300)}`)
    assert.equal(answer.body.error.code, 'LEASE_LOST')
    assert.deepEqual((await holdersOf(first)).map((h) => h.token), [other.body.token])
    assert.deepEqual(await holdersOf(second), [], 'the set released what it had taken')
    await call(base, 'DELETE', `/v1/leases/${other.body.leaseId}`)
  })

  it('a client that leaves mid-wait: the parts it had taken are released', async () => {
    const [first, second] = [unique('left-a'), unique('left-b')]
    const blocker = await call(base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const controller = new AbortController()
    const waiting = fetch(`${base}/v1/multi/acquire`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: controller.signal,
      body: JSON.stringify({ locks: [{ name: first }, { name: second }], ttl: '30s', wait: '30s' }),
    }).catch(() => 'left')
    await until('the set took its first name', async () => (await holdersOf(first)).length === 1)
    controller.abort()
    assert.equal(await waiting, 'left')
    await until('the first part was released when its client left (not at its 30 s ttl)', async () => (await holdersOf(first)).length === 0)
    assert.equal((await call(base, 'GET', lockPath(second))).body.waiters.length, 0, 'and the set left the line')
    await call(base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
  })

  it('a plain JSON wait longer than the server\'s longest poll: 409 after one poll, saying so, nothing held', async () => {
    const [first, second] = [unique('cap-a'), unique('cap-b')]
    const blocker = await call(shortPoll.base, 'POST', lockPath(second, '/acquire'), { ttl: '30s' })
    const answer = await call(shortPoll.base, 'POST', '/v1/multi/acquire', { locks: [{ name: first }, { name: second }], wait: '60s' })
    assert.equal(answer.status, 409, JSON.stringify(answer.body))
    assert.match(answer.body.error.message, /longest poll.*application\/x-ndjson/)
    assert.deepEqual(await holdersOf(first, shortPoll.base), [])
    await call(shortPoll.base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
  })

  it('bad input: 400 INVALID_ARGUMENT, nothing taken', async () => {
    const name = unique('bad')
    const cases: unknown[] = [
      {}, { locks: [] }, { locks: [{ name }, { name }] }, { locks: [{ name, mode: 'permit' }] }, { locks: [{ name: '' }] },
      { locks: Array.from({ length: 65 }, (_, i) => ({ name: `${name}/${i}` })) }, { locks: [{ name }], ttl: 'soon' }, { locks: [name] },
    ]
    for (const body of cases) {
      const answer = await call(base, 'POST', '/v1/multi/acquire', body)
      assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 80))
      assert.equal(answer.body.error.code, 'INVALID_ARGUMENT')
    }
    assert.equal((await call(base, 'GET', lockPath(name))).status, 404)
    assert.equal((await call(base, 'POST', '/v1/multi/release', { leases: ['not-a-lease'] })).status, 404)
  })

  it('is in the OpenAPI document, with its summary and named answers', async () => {
    const document = (await call(base, 'GET', '/openapi.json')).body
    const acquire = document.paths['/v1/multi/acquire'].post
    assert.equal(acquire.operationId, 'acquireMulti')
    assert.ok(acquire.summary)
    assert.equal(acquire.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/MultiGrant')
    assert.ok(document.paths['/v1/multi/release'].post.summary)
  })
})

describe('POST /v1/multi/acquire when the store dies half-way', () => {
  it('Redis frozen (SIGSTOP) past the ttl while the set holds one name and waits for the other: a typed error, then every name free', async (t) => {
    const redis = await startRedis()
    const served = await startBatonServer(['--store', redis.url])
    t.after(async () => {
      redis.resume()
      await served.stop()
      await redis.stop()
    })
    const [first, second] = [unique('frozen-a'), unique('frozen-b')]
    const ttl = ms(1500)
    const blocker = await call(served.base, 'POST', lockPath(second, '/acquire'), { ttl: ms(2500) })
    const waiting = call(served.base, 'POST', '/v1/multi/acquire', { locks: [{ name: first }, { name: second }], ttl, wait: '20s' })
    await until('the set took its first name', async () => (await holdersOf(first, served.base)).length === 1)
    redis.pause()
    await sleep(ttl * 2) // the first part's renewals can not reach the store
    redis.resume()
    const answer = await waiting
    t.diagnostic(`the set was answered ${answer.status} ${JSON.stringify(answer.body)}`)
    assert.ok([410, 503].includes(answer.status), `a typed error, got ${answer.status} ${JSON.stringify(answer.body)}`)
    assert.ok(['LEASE_LOST', 'BACKEND_UNAVAILABLE'].includes(answer.body.error.code), answer.body.error.code)
    // Nothing the set took outlives its ttl: the blocker's name ends with its own ttl too, and then the whole set is free.
    await call(served.base, 'DELETE', `/v1/leases/${blocker.body.leaseId}`)
    const after = await call(served.base, 'POST', '/v1/multi/acquire', { locks: [{ name: first }, { name: second }], wait: ttl + ms(4000) })
    assert.equal(after.status, 200, JSON.stringify(after.body))
    await call(served.base, 'POST', '/v1/multi/release', { leases: after.body.leases.map((l: { leaseId: string }) => l.leaseId) })
  })
})
