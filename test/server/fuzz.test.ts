/**
 * Random methods, paths, headers and bodies against a real server, bounded
 * in count and time: never a 5xx, never a crash, and the store is intact.
 * The seed is printed, so a failure can be replayed (BATON_FUZZ_SEED).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { call, lockPath } from './client.js'
import { LeaseIds } from '../../src/server/lease-id.js'

const COUNT = 1000
const seed = Number(process.env.BATON_FUZZ_SEED ?? Date.now() % 1_000_000)

/** mulberry32: a small seeded generator, so a run can be repeated. */
function generator(start: number): () => number {
  let a = start >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ADMIN = 'fuzz-admin-token-0123456789ab'
const TENANT = 'fuzz-tenant-token-0123456789'
const READER = 'fuzz-reader-token-0123456789'
const servers: Record<'open' | 'tokens', BatonServer> = {} as never
before(async () => {
  const file = tokensFile([
    { token: ADMIN, rights: ['admin'] }, { token: TENANT, prefixes: ['fuzz'] }, { token: READER, prefixes: ['fuzz/a/'], rights: ['read'] },
  ])
  servers.open = await startBatonServer()
  // With tokens and small quotas, so the fuzz also meets 401, 403 and 429 paths.
  servers.tokens = await startBatonServer([
    '--tokens', file, '--max-waiters-per-token', '3', '--max-streams-per-token', '2', '--max-holds-per-token', '50', '--max-ttl', '10m',
  ])
})
after(() => Promise.all(Object.values(servers).map((s) => s.stop())))

describe('fuzz', () => {
  for (const mode of ['open', 'tokens'] as const) it(`random requests never get a 5xx nor crash the server (${mode}, seed ${seed})`, async (t) => {
    t.diagnostic(`seed ${seed}`)
    const server = servers[mode]
    const base = server.base
    const admin: Record<string, string> = mode === 'tokens' ? { authorization: `Bearer ${ADMIN}` } : {}
    const keptSentAt = Date.now()
    const kept = await call(base, 'POST', lockPath('fuzz/kept', '/acquire'), { ttl: '5m' }, admin)
    const keptRoundTrip = Date.now() - keptSentAt
    assert.equal(kept.status, 200)
    // Its lease id goes into the fuzz; `kept`'s does not, so the fuzz can not release it legitimately.
    const toy = await call(base, 'POST', lockPath('fuzz/toy', '/acquire'), { ttl: '5m' }, admin)
    const session = await call(base, 'POST', '/v1/sessions', {}, admin)
    assert.equal(session.status, 201)
    const pid = server.pid
    const random = generator(seed)
    /** A lease id or session id with one bit changed (anywhere: fields or MAC). */
    const edited = (id: string) => {
      const bytes = Buffer.from(id, 'base64url')
      const at = Math.floor(random() * bytes.length)
      bytes[at] = bytes[at]! ^ (1 << Math.floor(random() * 8))
      return bytes.toString('base64url')
    }
    // A well-formed id of another store's server (its own secret), for a name the tokens may lock.
    const foreign = new LeaseIds('fuzz-another-store-secret-0123').encode({
      name: 'fuzz/toy', kind: 'mutex', mode: 'exclusive', permits: 1, fair: false, lockDelayMs: 0, owner: 'abcdefgh.AAAAAAAAAAAAAAAAAAAAAA', token: 1n,
    }, 2 ** 31 - 1)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
    const junk = (length: number) => Array.from({ length }, () => String.fromCharCode(Math.floor(random() * 0x2ff))).join('')
    const value = (depth = 0): unknown => pick([
      () => null, () => true, () => random() * 1e6 - 5e5, () => -1, () => 0, () => 2 ** 60, () => Number.MAX_SAFE_INTEGER,
      () => junk(Math.floor(random() * 40)), () => pick(['10s', '0', '-5s', '1h', '999999999h', 'NaN', '', '5 m']),
      () => (depth > 3 ? [] : Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))),
      () => (depth > 3 ? {} : object(depth + 1)),
    ])()
    const object = (depth = 0): Record<string, unknown> => Object.fromEntries(
      Array.from({ length: Math.floor(random() * 5) }, () => [
        pick(['ttl', 'wait', 'mode', 'permits', 'fair', 'lockDelay', 'waitId', 'leases', 'leaseId', 'session', 'sessionId', 'giveUp', 'x', '__proto__', 'constructor', junk(5)]),
        value(depth),
      ]),
    )
    const segment = () => pick([
      'fuzz%2Fa', 'fuzz/a', encodeURIComponent(junk(8)), '%', '%zz', '%00', 'x'.repeat(5000), '..', '', toy.body.leaseId,
      // Forged and edited ids: `kept`'s edited one too, which must never act on `kept`.
      edited(toy.body.leaseId), edited(kept.body.leaseId), foreign, session.body.sessionId, edited(session.body.sessionId),
      Buffer.from([2, 255, 0, 200, 200, 200, 200, 200, 200, 200, 200, 9, ...Buffer.from(junk(3))]).toString('base64url'),
    ])
    const path = () => pick([
      () => `/v1/locks/${segment()}/acquire`, () => `/v1/locks/${segment()}`, () => `/v1/leases/${segment()}/extend`,
      () => `/v1/leases/${segment()}`, () => '/v1/leases/extend', () => `/v1/leases/${segment()}/downgrade`,
      () => `/v1/locks?prefix=${segment()}&limit=${pick(['1', '0', '-1', 'x', '99999'])}&cursor=${segment()}`,
      () => `/v1/waits/${segment()}`, () => `/${segment()}`, () => '/metrics', () => '/readyz', () => `/v1/events?types=${segment()}`,
      () => `/v1/locks/${segment()}/${segment()}/acquire`, () => '/v1/sessions', () => `/v1/sessions/${segment()}/keepalive`,
      () => '/v1/sessions/keepalive', () => `/v1/sessions/${segment()}`, () => '/v1/leases/release', () => '/v1/leases', () => '/v1/leases/downgrade',
    ])()
    const body = () => pick([
      () => undefined, () => JSON.stringify(object()), () => JSON.stringify(value()), () => junk(Math.floor(random() * 200)),
      () => JSON.stringify({ leaseId: segment(), sessionId: segment(), giveUp: [segment(), segment()], session: segment(), ...(random() < 0.5 ? { ttl: pick(['1s', '10m']) } : {}) }),
      () => '{"ttl":', () => `{"leases":[${Array.from({ length: 50 }, () => JSON.stringify(segment())).join(',')}]}`,
      () => '{"a":'.repeat(500), () => JSON.stringify({ pad: 'x'.repeat(70_000) }),
    ])()

    const stopAt = Date.now() + ms(60_000)
    let sent = 0
    for (; sent < COUNT && Date.now() < stopAt; sent++) {
      const method = pick(['GET', 'POST', 'POST', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'])
      const payload = method === 'GET' || method === 'HEAD' ? undefined : body()
      const headers: Record<string, string> = {}
      if (payload !== undefined) headers['content-type'] = pick(['application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', junk(6).replace(/[^\x21-\x7e]/g, 'a')])
      if (random() < (mode === 'tokens' ? 0.9 : 0.2)) {
        headers.authorization = pick(['Bearer x', 'Basic abc', junk(10).replace(/[^\x20-\x7e]/g, 'b'), ...[ADMIN, TENANT, TENANT, READER].map((tk) => `Bearer ${tk}`)])
      }
      if (random() < 0.05) headers.origin = pick(['https://evil.example', 'null', base, junk(8).replace(/[^\x21-\x7e]/g, 'c')])
      if (random() < 0.1) headers['baton-lease-id'] = pick([toy.body.leaseId, segment()])
      if (random() < 0.05) headers['last-event-id'] = pick(['1', '00000000-1', 'x'.repeat(300), junk(8).replace(/[^\x21-\x7e]/g, 'd')])
      if (random() < 0.1) headers.accept = pick(['application/x-ndjson', 'text/event-stream', '*/*'])
      const target = path()
      const controller = new AbortController()
      // A request that waits (a random "wait") is cut short: the server must cope with that too.
      const timer = setTimeout(() => controller.abort(), ms(200))
      try {
        const response = await fetch(base + target, { method, headers, ...(payload === undefined ? {} : { body: payload }), signal: controller.signal })
        await response.arrayBuffer().catch(() => {})
        assert.ok(response.status < 500, `${method} ${target.slice(0, 200)} ${String(payload).slice(0, 200)} → ${response.status}`)
      } catch (error) {
        if (!controller.signal.aborted) throw error
      } finally {
        clearTimeout(timer)
      }
    }
    t.diagnostic(`${sent} requests`)
    assert.equal(server.pid, pid)
    assert.deepEqual((await call(base, 'GET', '/healthz')).body, { ok: true })
    const view = await call(base, 'GET', lockPath('fuzz/kept'), undefined, admin)
    assert.equal(view.body.holders.length, 1)
    assert.equal(view.body.holders[0].token, kept.body.token)
    assert.equal(view.body.holders[0].owner, kept.body.owner)
    // Never renewed by a forged id past what it was granted (5 minutes from its grant). The answer counts
    // from when the server asked the store, the store from when it granted: apart by at most the round trip.
    assert.ok(view.body.holders[0].expiresAt <= kept.body.expiresAt + keptRoundTrip + 1, `kept was not extended by anyone (round trip ${keptRoundTrip} ms)`)
    const again = await call(base, 'POST', lockPath('fuzz/other', '/acquire'), { wait: '1s' }, admin)
    assert.equal(again.status, 200)
  })
})
