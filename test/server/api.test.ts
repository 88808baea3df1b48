/**
 * The HTTP API of `baton serve` as a user sees it: the real binary, real
 * HTTP (fetch and curl), on its embedded store.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { call, curl, lockPath, readEvents } from './client.js'
import { LeaseIds } from '../../src/server/lease-id.js'

let server: BatonServer
let base: string
let seq = 0
const fresh = (label: string) => `api/${label}/${++seq}/${Math.random().toString(36).slice(2, 8)}`

/** The secret owner inside a lease id (the test knows the format; clients need not). */
/** The server's lease secret, so the test can read (and mint) its lease ids; clients need not. */
const LEASE_SECRET = 'api-test-lease-secret-0123456789'
const leaseIds = new LeaseIds(LEASE_SECRET)
const secretOf = (leaseId: string): string => leaseIds.decode(leaseId)!.owner.split('.')[1]!

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(10_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

before(async () => {
  server = await startBatonServer(['--max-waiters-per-name', '3', '--lease-secret', LEASE_SECRET])
  base = server.base
})
after(() => server.stop())

describe('baton serve: locks and leases', () => {
  it('acquire, conflict, inspect, extend, batch extend, release', async () => {
    const name = fresh('basic')
    const first = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s' })
    assert.equal(first.status, 200)
    assert.match(first.body.token, /^\d+$/)
    assert.ok(first.body.expiresAt > Date.now())
    const busy = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s' })
    assert.equal(busy.status, 409)
    assert.equal(busy.body.error.code, 'LOCK_TIMEOUT')

    const view = await call(base, 'GET', lockPath(name))
    assert.equal(view.status, 200)
    assert.equal(view.body.holders[0].owner, first.body.owner)
    assert.equal(view.body.holders[0].token, first.body.token)
    // Nothing shown lets anyone act on the lease.
    const secret = secretOf(first.body.leaseId)
    assert.ok(!JSON.stringify(view.body).includes(secret))
    assert.ok(!JSON.stringify(busy.body).includes(secret))

    const extended = await call(base, 'POST', `/v1/leases/${first.body.leaseId}/extend`, { ttl: '20s' })
    assert.equal(extended.status, 200)
    assert.equal(extended.body.ttlMs, 20_000)
    const batch = await call(base, 'POST', '/v1/leases/extend', { leases: [first.body.leaseId, 'not-a-lease'], ttl: 15_000 })
    assert.deepEqual(batch.body.results.map((r: { status: string }) => r.status), ['extended', 'lost'])

    const released = await call(base, 'DELETE', `/v1/leases/${first.body.leaseId}`)
    assert.deepEqual(released.body, { released: true })
    assert.deepEqual((await call(base, 'DELETE', `/v1/leases/${first.body.leaseId}`)).body, { released: false })
    const gone = await call(base, 'POST', `/v1/leases/${first.body.leaseId}/extend`)
    assert.equal(gone.status, 410)
    assert.equal(gone.body.error.code, 'LEASE_LOST')
    assert.equal((await call(base, 'GET', lockPath(name))).status, 404)
  })

  it('a long-poll is answered the moment the holder releases, with a larger token', async () => {
    const name = fresh('longpoll')
    const holder = await call(base, 'POST', lockPath(name, '/acquire'), {})
    const waiting = call(base, 'POST', lockPath(name, '/acquire'), { wait: '30s' })
    await eventually('the waiter in line', async () => (await call(base, 'GET', lockPath(name))).body.waiters?.length === 1)
    await call(base, 'DELETE', `/v1/leases/${holder.body.leaseId}`)
    const next = await waiting
    assert.equal(next.status, 200)
    assert.ok(BigInt(next.body.token) > BigInt(holder.body.token))
    await call(base, 'DELETE', `/v1/leases/${next.body.leaseId}`)
  })

  it('a waiting client that disconnects leaves the line at once', async () => {
    const name = fresh('disconnect')
    const holder = await call(base, 'POST', lockPath(name, '/acquire'), {})
    const controller = new AbortController()
    const waiting = fetch(base + lockPath(name, '/acquire'), {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"wait":"60s"}', signal: controller.signal,
    }).catch(() => 'aborted')
    await eventually('the waiter in line', async () => (await call(base, 'GET', lockPath(name))).body.waiters?.length === 1)
    controller.abort()
    assert.equal(await waiting, 'aborted')
    await eventually('the line to empty', async () => (await call(base, 'GET', lockPath(name))).body.waiters?.length === 0)
    await call(base, 'DELETE', `/v1/leases/${holder.body.leaseId}`)
    assert.equal((await call(base, 'GET', lockPath(name))).status, 404, 'nobody was granted it')
  })

  it('DELETE /v1/waits/{waitId} ends a wait; the caps on waiters answer 429 with Retry-After', async () => {
    const name = fresh('caps')
    const holder = await call(base, 'POST', lockPath(name, '/acquire'), {})
    const waitIds = ['aaaaaaaaaaaaaaaa1', 'aaaaaaaaaaaaaaaa2', 'aaaaaaaaaaaaaaaa3']
    const waiting = waitIds.map((waitId) => call(base, 'POST', lockPath(name, '/acquire'), { wait: '60s', waitId }))
    await eventually('three waiters', async () => (await call(base, 'GET', lockPath(name))).body.waiters?.length === 3)
    const refused = await call(base, 'POST', lockPath(name, '/acquire'), { wait: '60s' })
    assert.equal(refused.status, 429)
    assert.equal(refused.body.error.code, 'TOO_MANY_WAITERS')
    assert.ok(Number(refused.headers.get('retry-after')) >= 1)
    for (const waitId of waitIds) assert.equal((await call(base, 'DELETE', `/v1/waits/${waitId}`)).status, 204)
    for (const answer of await Promise.all(waiting)) assert.ok(answer.status >= 400, JSON.stringify(answer.body))
    assert.equal((await call(base, 'GET', lockPath(name))).body.waiters.length, 0)
    assert.equal((await call(base, 'DELETE', '/v1/waits/aaaaaaaaaaaaaaaa1')).status, 404)
    await call(base, 'DELETE', `/v1/leases/${holder.body.leaseId}`)
  })

  it('read-write locks, downgrade, semaphores, forced release', async () => {
    const rw = fresh('rw')
    const r1 = await call(base, 'POST', lockPath(rw, '/acquire'), { mode: 'read' })
    const r2 = await call(base, 'POST', lockPath(rw, '/acquire'), { mode: 'read' })
    assert.equal(r1.status, 200)
    assert.equal(r2.status, 200)
    assert.equal((await call(base, 'POST', lockPath(rw, '/acquire'), { mode: 'write' })).status, 409)
    await call(base, 'DELETE', `/v1/leases/${r1.body.leaseId}`)
    await call(base, 'DELETE', `/v1/leases/${r2.body.leaseId}`)
    const w = await call(base, 'POST', lockPath(rw, '/acquire'), { mode: 'write' })
    const down = await call(base, 'POST', `/v1/leases/${w.body.leaseId}/downgrade`)
    assert.equal(down.body.mode, 'read')
    assert.equal(down.body.token, w.body.token)
    assert.equal((await call(base, 'POST', lockPath(rw, '/acquire'), { mode: 'read' })).status, 200)

    const sem = fresh('sem')
    const permits = [1, 2].map(() => call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 2 }))
    assert.deepEqual((await Promise.all(permits)).map((p) => p.status), [200, 200])
    assert.equal((await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 2 })).status, 409)
    const wrongSize = await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 3 })
    assert.equal(wrongSize.status, 400)
    assert.match(wrongSize.body.error.message, /2 permits/)
    await call(base, 'DELETE', lockPath(sem))

    // Weighted permits: the weight is taken, shown, and carried by the lease id.
    const heavy = await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 4, weight: 3 })
    assert.equal(heavy.status, 200)
    assert.equal(leaseIds.decode(heavy.body.leaseId)!.weight, 3)
    assert.equal((await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 4, weight: 2 })).status, 409)
    const light = await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 4 })
    assert.equal(light.status, 200)
    const view = await call(base, 'GET', lockPath(sem))
    assert.deepEqual(view.body.holders.map((h: { weight: number }) => h.weight).sort(), [1, 3])
    assert.equal((await call(base, 'DELETE', `/v1/leases/${heavy.body.leaseId}`)).body.released, true)
    assert.equal((await call(base, 'POST', lockPath(sem, '/acquire'), { mode: 'permit', permits: 4, weight: 3 })).status, 200)
    const forced = await call(base, 'DELETE', lockPath(sem))
    assert.deepEqual(forced.body, { released: true })
    assert.equal((await call(base, 'GET', lockPath(sem))).status, 404)
  })

  it('a retried acquire with the same requestId gets the same lease, not a second hold', async () => {
    const name = fresh('idem')
    const requestId = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url')
    const first = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s', requestId })
    assert.equal(first.status, 200)
    // Its answer "lost": the client sends the same request again, with or without waiting.
    const again = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s', requestId })
    assert.equal(again.status, 200)
    assert.equal(again.body.token, first.body.token)
    assert.equal(again.body.leaseId, first.body.leaseId)
    const waited = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s', wait: '1s', requestId })
    assert.equal(waited.body.token, first.body.token)
    const view = await call(base, 'GET', lockPath(name))
    assert.equal(view.body.holders.length, 1)
    // Anyone else is still refused; another name with the same id is another lease.
    assert.equal((await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s' })).status, 409)
    const other = await call(base, 'POST', lockPath(`${name}-2`, '/acquire'), { ttl: '10s', requestId })
    assert.notEqual(other.body.leaseId, first.body.leaseId)
    // Two attempts of one request id at once are refused, so they can not undo each other.
    const holder = await call(base, 'POST', lockPath(`${name}-3`, '/acquire'), { ttl: '10s' })
    const blocked = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url')
    const waiting = call(base, 'POST', lockPath(`${name}-3`, '/acquire'), { ttl: '10s', wait: '2s', requestId: blocked })
    await new Promise((r) => setTimeout(r, ms(200)))
    assert.equal((await call(base, 'POST', lockPath(`${name}-3`, '/acquire'), { ttl: '10s', requestId: blocked })).status, 409)
    await call(base, 'DELETE', `/v1/leases/${holder.body.leaseId}`)
    const granted = await waiting
    assert.equal(granted.status, 200)
    for (const lease of [first, other, granted]) assert.deepEqual((await call(base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body, { released: true })
    assert.equal((await call(base, 'POST', lockPath(name, '/acquire'), { requestId: 'short' })).status, 400)
  })

  it('a requestId retried with another weight is not answered the first hold under the new weight', async () => {
    // The store would find the first hold (weight 1) by its owner and the server would answer a lease id
    // claiming weight 4: the client would use 4 permits while the store counts 1 (more than permits in use).
    const name = fresh('idem-weight')
    const requestId = Buffer.from(crypto.getRandomValues(new Uint8Array(18))).toString('base64url')
    const light = await call(base, 'POST', lockPath(name, '/acquire'), { mode: 'permit', permits: 4, weight: 1, ttl: '10s', requestId })
    assert.equal(light.status, 200)
    const heavy = await call(base, 'POST', lockPath(name, '/acquire'), { mode: 'permit', permits: 4, weight: 4, ttl: '10s', requestId })
    assert.equal(heavy.status, 409, 'weight 4 does not fit next to the weight-1 hold')
    const view = await call(base, 'GET', lockPath(name))
    assert.deepEqual(view.body.holders.map((h: { weight: number }) => h.weight), [1])
    // The same weight (1 is the default) is still the same request: the same lease.
    const again = await call(base, 'POST', lockPath(name, '/acquire'), { mode: 'permit', permits: 4, ttl: '10s', requestId })
    assert.equal(again.body.leaseId, light.body.leaseId)
    assert.deepEqual((await call(base, 'DELETE', `/v1/leases/${light.body.leaseId}`)).body, { released: true })
  })

  it('list pages by cursor under a prefix', async () => {
    const prefix = `${fresh('list')}/`
    const leases = []
    for (const n of ['a', 'b', 'c', 'd', 'e']) leases.push((await call(base, 'POST', lockPath(prefix + n, '/acquire'), {})).body)
    const names: string[] = []
    let cursor: string | undefined
    do {
      const page = await call(base, 'GET', `/v1/locks?prefix=${encodeURIComponent(prefix)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      assert.equal(page.status, 200)
      assert.ok(page.body.locks.length <= 2)
      names.push(...page.body.locks.map((l: { name: string }) => l.name))
      cursor = page.body.nextCursor
    } while (cursor)
    assert.deepEqual(names, ['a', 'b', 'c', 'd', 'e'].map((n) => prefix + n))
    assert.equal((await call(base, 'GET', '/v1/locks?limit=0')).status, 400)
    for (const lease of leases) await call(base, 'DELETE', `/v1/leases/${lease.leaseId}`)
  })

  it('server-sent events: grant, release, expire, lost, filtered by prefix, never a secret', async () => {
    const prefix = `${fresh('events')}/`
    let opened!: () => void
    const open = new Promise<void>((r) => (opened = r))
    // Seven: a forced release is also told as 'forced' (issue 17: who did it).
    const events = readEvents(base, `?prefix=${encodeURIComponent(prefix)}`, {}, opened, 7)
    await open
    await call(base, 'POST', lockPath('elsewhere/x', '/acquire'), { ttl: '1s' })
    const a = await call(base, 'POST', lockPath(`${prefix}a`, '/acquire'), {})
    await call(base, 'DELETE', `/v1/leases/${a.body.leaseId}`)
    await call(base, 'POST', lockPath(`${prefix}b`, '/acquire'), { ttl: 300 })
    const c = await call(base, 'POST', lockPath(`${prefix}c`, '/acquire'), {})
    await call(base, 'DELETE', lockPath(`${prefix}c`))
    const seen = await events
    const kinds = seen.map((e) => `${e.event} ${e.data.name.slice(prefix.length)}`)
    assert.deepEqual(kinds.slice(0, 3), ['grant a', 'release a', 'grant b'])
    for (const kind of ['grant c', 'lost c', 'forced c', 'expire b']) assert.ok(kinds.includes(kind), `${kind} in ${kinds.join(', ')}`)
    const text = JSON.stringify(seen)
    assert.ok(!text.includes(secretOf(a.body.leaseId)) && !text.includes(secretOf(c.body.leaseId)))
    assert.equal(seen[0]!.data.owner, a.body.owner)
  })
})

describe('baton serve: bad input never reaches the store', () => {
  it('unknown fields, wrong types, bad JSON, bad names and durations: 400 with a code', async () => {
    const name = fresh('bad')
    const cases: [string, unknown][] = [
      [lockPath(name, '/acquire'), { ttl: '10s', colour: 'red' }],
      [lockPath(name, '/acquire'), { ttl: true }],
      [lockPath(name, '/acquire'), { ttl: '10 parsecs' }],
      [lockPath(name, '/acquire'), { ttl: 5 }],
      [lockPath(name, '/acquire'), { wait: -1 }],
      [lockPath(name, '/acquire'), { mode: 'sideways' }],
      [lockPath(name, '/acquire'), { mode: 'permit' }],
      [lockPath(name, '/acquire'), { permits: 2 }],
      [lockPath(name, '/acquire'), { weight: 2 }],
      [lockPath(name, '/acquire'), { mode: 'permit', permits: 2, weight: 3 }],
      [lockPath(name, '/acquire'), { mode: 'permit', permits: 2, weight: 0 }],
      [lockPath(name, '/acquire'), { mode: 'permit', permits: 2, weight: 1.5 }],
      [lockPath(name, '/acquire'), { fair: 'yes' }],
      [lockPath(name, '/acquire'), '{"ttl":'],
      [lockPath(name, '/acquire'), '[1,2,3]'],
      [lockPath(name, '/acquire'), '{"__proto__":{"x":1}}'],
      ['/v1/locks/a%00b/acquire', {}],
      ['/v1/locks/brace%7Bx%7D/acquire', {}],
      [`/v1/locks/${'x'.repeat(300)}/acquire`, {}],
      ['/v1/leases/extend', { leases: 'nope' }],
      ['/v1/leases/extend', {}],
    ]
    for (const [path, body] of cases) {
      const answer = await call(base, 'POST', path, body)
      assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`)
      assert.equal(answer.body.error.code, 'INVALID_ARGUMENT')
      assert.ok(answer.body.error.message.length > 10)
    }
    const oversize = await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '10s', pad: 'x'.repeat(100_000) })
    assert.equal(oversize.status, 413)
    assert.equal(oversize.body.error.code, 'INVALID_ARGUMENT')
    assert.equal((await call(base, 'GET', lockPath(name))).status, 404, 'nothing reached the store')
  })

  it('unknown lease ids: 404 for what is not a lease id, 410 or released false for one that is gone', async () => {
    assert.equal((await call(base, 'POST', '/v1/leases/nope/extend')).status, 404)
    assert.equal((await call(base, 'DELETE', '/v1/leases/nope')).status, 404)
    const forged = leaseIds.encode({
      name: 'x', kind: 'mutex', mode: 'exclusive', permits: 1, fair: false, lockDelayMs: 0, owner: 'abcdefgh.AAAAAAAAAAAAAAAAAAAAAA', token: 1n,
    }, 1000)
    assert.equal((await call(base, 'POST', `/v1/leases/${forged}/extend`)).status, 410)
    assert.deepEqual((await call(base, 'DELETE', `/v1/leases/${forged}`)).body, { released: false })
    assert.equal((await call(base, 'GET', '/v1/nothing')).status, 404)
  })
})

describe('baton serve: operations', () => {
  it('healthz, readyz, info, openapi, metrics, dashboard placeholder', async () => {
    assert.deepEqual((await call(base, 'GET', '/healthz')).body, { ok: true })
    assert.equal((await call(base, 'GET', '/readyz')).body.ready, true)
    assert.equal((await call(base, 'GET', '/v1/info')).body.store, 'memory')
    const openapi = await call(base, 'GET', '/openapi.json')
    assert.equal(openapi.body.openapi, '3.0.3')
    for (const path of ['/v1/locks/{name}/acquire', '/v1/leases/{leaseId}/extend', '/v1/leases/extend', '/v1/leases/{leaseId}', '/v1/locks', '/v1/locks/{name}', '/v1/events']) {
      assert.ok(openapi.body.paths[path], `openapi has ${path}`)
    }
    assert.ok(openapi.body.paths['/v1/locks/{name}/acquire'].post.requestBody.content['application/json'].schema.properties.ttl)
    const metrics = await call(base, 'GET', '/metrics')
    for (const metric of ['baton_grants_total', 'baton_acquire_duration_seconds', 'baton_wait_seconds', 'baton_held_leases', 'baton_waiting_requests', 'baton_http_request_duration_seconds', 'baton_timeouts_total']) {
      assert.match(metrics.body, new RegExp(metric), metric)
    }
    const page = await call(base, 'GET', '/')
    assert.match(page.headers.get('content-type') ?? '', /text\/html/)
  })

  it('curl: acquire, inspect, release', async () => {
    const name = fresh('curl')
    const acquired = await curl(['-X', 'POST', '-H', 'content-type: application/json', '-d', '{"ttl":"30s","wait":"1s"}', base + lockPath(name, '/acquire')])
    assert.equal(acquired.status, 200)
    const { leaseId, token } = JSON.parse(acquired.body)
    const inspected = await curl([base + lockPath(name)])
    assert.equal(JSON.parse(inspected.body).holders[0].token, token)
    const released = await curl(['-X', 'DELETE', `${base}/v1/leases/${leaseId}`])
    assert.deepEqual(JSON.parse(released.body), { released: true })
  })

  it('SIGTERM: waiting requests get 503, the process exits', async () => {
    const other = await startBatonServer()
    const holder = await call(other.base, 'POST', lockPath('shutdown', '/acquire'), {})
    assert.equal(holder.status, 200)
    const waiting = call(other.base, 'POST', lockPath('shutdown', '/acquire'), { wait: '60s' })
    await eventually('the waiter', async () => (await call(other.base, 'GET', lockPath('shutdown'))).body.waiters?.length === 1)
    await other.stop()
    const answer = await waiting
    assert.equal(answer.status, 503)
    assert.equal(answer.body.error.code, 'BACKEND_UNAVAILABLE')
    assert.match(answer.body.error.message, /shutting down/)
  })
})
