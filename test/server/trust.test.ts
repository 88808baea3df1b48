/**
 * The server's trust model (issue 27): a lease id can not be edited or
 * forged (every field, and a valid id of another store's server), renewals
 * are held to the caps in force, the default ttl obeys --max-ttl, and a
 * token's hold quota survives a restart of the server.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { startRedis, type RedisServer } from '../harness/servers.js'
import { bearer, call, lockPath } from './client.js'

const servers: BatonServer[] = []
const redises: RedisServer[] = []
after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
  await Promise.all(redises.map((r) => r.stop()))
})
const start = async (args: string[]) => {
  const server = await startBatonServer(args)
  servers.push(server)
  return server
}
const redis = async () => {
  const server = await startRedis()
  redises.push(server)
  return server
}

/** The fields of a lease id as the test reads its bytes (the layout of src/server/lease-id.ts), whatever follows the name kept aside. */
interface Fields { version: number; flags: number; permits: number; weight?: number; lockDelayMs: number; ttlMs: number; token: string; owner: string; name: string; tail: Buffer }
const MAC_BYTES = 16

function readVarint(buf: Buffer, cursor: { at: number }): number {
  let value = 0
  for (let scale = 1; ; scale *= 128) {
    const byte = buf[cursor.at++]!
    value += (byte & 127) * scale
    if (byte < 128) return value
  }
}
function writeVarint(value: number): number[] {
  const out: number[] = []
  while (value >= 128) {
    out.push((value % 128) | 128)
    value = Math.floor(value / 128)
  }
  out.push(value)
  return out
}
function parse(id: string): Fields {
  const whole = Buffer.from(id, 'base64url')
  // Version 2 ids (before this issue) end with the name; version 3 with a MAC after it.
  const macBytes = whole[0]! >= 3 ? MAC_BYTES : 0
  const buf = whole.subarray(0, whole.length - macBytes)
  const cursor = { at: 2 }
  const flags = buf[1]!
  const permits = readVarint(buf, cursor)
  const weight = flags & 32 ? readVarint(buf, cursor) : undefined
  const lockDelayMs = readVarint(buf, cursor)
  const ttlMs = readVarint(buf, cursor)
  const text = () => {
    const length = buf[cursor.at]!
    const value = buf.toString('latin1', cursor.at + 1, cursor.at + 1 + length)
    cursor.at += 1 + length
    return value
  }
  const token = text()
  const owner = text()
  return { version: buf[0]!, flags, permits, ...(weight !== undefined ? { weight } : {}), lockDelayMs, ttlMs, token, owner, name: buf.toString('utf8', cursor.at), tail: whole.subarray(whole.length - macBytes) }
}
/** The id with some fields changed and its MAC (if any) kept: what a client editing its own id sends. */
function edit(id: string, patch: Partial<Fields>): string {
  const f = { ...parse(id), ...patch }
  const flags = patch.weight !== undefined ? f.flags | 32 : f.flags
  return Buffer.concat([
    Buffer.from([f.version, flags, ...writeVarint(f.permits), ...(flags & 32 ? writeVarint(f.weight ?? 1) : []), ...writeVarint(f.lockDelayMs), ...writeVarint(f.ttlMs)]),
    Buffer.from([f.token.length]), Buffer.from(f.token, 'latin1'), Buffer.from([f.owner.length]), Buffer.from(f.owner, 'latin1'),
    Buffer.from(f.name, 'utf8'), f.tail,
  ]).toString('base64url')
}

/** Every way an edited or foreign id may be used: each refused, none renews or releases anything. */
async function refusedEverywhere(base: string, id: string, what: string, headers: Record<string, string> = {}): Promise<void> {
  const extend = await call(base, 'POST', `/v1/leases/${id}/extend`, {}, headers)
  assert.ok(extend.status === 404 || extend.status === 403, `${what}: per-lease extend → ${extend.status} ${JSON.stringify(extend.body)}`)
  const batch = await call(base, 'POST', '/v1/leases/extend', { leases: [id] }, headers)
  assert.equal(batch.status, 200)
  assert.notEqual(batch.body.results[0].status, 'extended', `${what}: batch extend`)
  const session = await call(base, 'POST', '/v1/sessions', {}, headers)
  const joined = await call(base, 'POST', '/v1/leases/extend', { leases: [id], session: session.body.sessionId }, headers)
  assert.notEqual(joined.body.results[0].status, 'extended', `${what}: batch extend into a session`)
  assert.deepEqual((await call(base, 'POST', `/v1/sessions/${session.body.sessionId}/keepalive`, {}, headers)).body.leases, 0, `${what}: a session renews it`)
  const release = await call(base, 'POST', '/v1/leases/release', { leaseId: id }, headers)
  assert.ok(release.status === 404 || release.status === 403, `${what}: release → ${release.status}`)
  assert.equal((await call(base, 'POST', '/v1/multi/release', { leases: [id] }, headers)).status, 404, `${what}: multi release`)
  for (const route of ['proclaim', 'resign']) {
    const answer = await call(base, 'POST', `/v1/elections/${encodeURIComponent(parse(id).name)}/${route}`, route === 'proclaim' ? { leaseId: id, value: 'x' } : { leaseId: id }, headers)
    assert.equal(answer.status, 404, `${what}: election ${route} → ${answer.status}`)
  }
}

describe('lease ids no client can edit', () => {
  it('every field edited, an unsigned id, a valid id of another store\'s server: 404, never a renewal or a release', async () => {
    const [server, other] = await Promise.all([start(['--max-ttl', '1m', '--max-lock-delay', '1s']), start([])])
    const { base } = server
    const mutex = await call(base, 'POST', lockPath('trust/mutex', '/acquire'), { ttl: '1m' })
    const write = await call(base, 'POST', lockPath('trust/rw', '/acquire'), { ttl: '1m', mode: 'write' })
    const permit = await call(base, 'POST', lockPath('trust/sem', '/acquire'), { ttl: '1m', mode: 'permit', permits: 4, weight: 3 })
    for (const answer of [mutex, write, permit]) assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const id = mutex.body.leaseId as string
    const f = parse(id)
    const flipped = f.owner.slice(0, -1) + (f.owner.endsWith('A') ? 'B' : 'A')
    const foreign = await call(other.base, 'POST', lockPath('trust/mutex', '/acquire'), { ttl: '10s' })
    const forged: [string, string][] = [
      ['ttl 2^31-1', edit(id, { ttlMs: 2 ** 31 - 1 })],
      ['lock delay', edit(id, { lockDelayMs: 1000 })],
      ['name', edit(id, { name: 'trust/other' })],
      ['owner', edit(id, { owner: flipped })],
      ['token', edit(id, { token: String(BigInt(f.token) + 1n) })],
      ['mode', edit(write.body.leaseId, { flags: (parse(write.body.leaseId).flags & ~(3 << 2)) | (1 << 2) })], // write → read
      ['weight', edit(permit.body.leaseId, { weight: 1 })],
      ['unsigned (version 2)', edit(id, { version: 2, tail: Buffer.alloc(0) })],
      ['another store\'s server', foreign.body.leaseId],
    ]
    assert.equal(parse(edit(id, {})).ttlMs, f.ttlMs, 'the test re-encodes an id unchanged')
    assert.equal(edit(id, {}), id)
    for (const [what, forgedId] of forged) await refusedEverywhere(base, forgedId, what)
    // The real leases are untouched: still held, still ending within their own ttl.
    for (const [name, answer] of [['trust/mutex', mutex], ['trust/rw', write], ['trust/sem', permit]] as const) {
      const view = await call(base, 'GET', lockPath(name))
      assert.equal(view.body.holders.length, 1, name)
      assert.equal(view.body.holders[0].token, answer.body.token)
      assert.ok(view.body.holders[0].expiresAt <= Date.now() + 60_000 + 1000, `${name} was not renewed past its ttl`)
    }
    // And their own ids still work.
    assert.equal((await call(base, 'POST', `/v1/leases/${id}/extend`, {})).status, 200)
  })

  it('names under ".baton/" are the server\'s own: refused by every route, never listed', async () => {
    const store = await redis()
    const { base } = await start(['--store', store.url])
    for (const [method, path, body] of [
      ['POST', lockPath('.baton/lease-secret', '/acquire'), {}], ['GET', lockPath('.baton/lease-secret'), undefined],
      ['DELETE', lockPath('.baton/lease-secret'), undefined], ['GET', '/v1/elections/.baton%2Flease-secret', undefined],
      ['POST', '/v1/multi/acquire', { locks: [{ name: '.baton/lease-secret' }] }],
    ] as const) {
      const answer = await call(base, method, path, body)
      assert.equal(answer.status, 400, `${method} ${path}: ${JSON.stringify(answer.body)}`)
    }
    const list = await call(base, 'GET', '/v1/locks?prefix=.baton')
    assert.deepEqual(list.body.locks, [])
  })

  it('the server\'s own hold takes no place on a list page: every page but the last says another follows', async () => {
    const store = await redis()
    const { base } = await start(['--store', store.url])
    // ".baton/lease-secret" sorts before these names, so it falls on the first page of the store.
    const names = ['list/a', 'list/b', 'list/c', 'list/d', 'list/e']
    for (const name of names) assert.equal((await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '5m' })).status, 200)
    for (const limit of [1, 2, 5]) {
      const seen: string[] = []
      let cursor: string | undefined
      for (let pages = 0; pages < 10; pages++) {
        const page = await call(base, 'GET', `/v1/locks?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
        assert.equal(page.status, 200, JSON.stringify(page.body))
        assert.equal(page.body.locks.length, Math.min(limit, names.length - seen.length), `limit ${limit}: a full page unless it is the last`)
        seen.push(...page.body.locks.map((l: { name: string }) => l.name))
        cursor = page.body.nextCursor
        if (!cursor) break
      }
      assert.deepEqual(seen, names, `limit ${limit}`)
    }
  })
})

describe('servers sharing a store share the lease secret', () => {
  let store: RedisServer
  let one: BatonServer
  let two: BatonServer
  before(async () => {
    store = await redis()
    ;[one, two] = await Promise.all([start(['--store', store.url]), start(['--store', store.url])])
  })

  it('a lease id of one is good on the other and after a restart (kill -9); a server of another store refuses it', async () => {
    const lease = await call(one.base, 'POST', lockPath('shared-secret/a', '/acquire'), { ttl: '2m' })
    assert.equal(lease.status, 200)
    assert.equal((await call(two.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, {})).status, 200)
    await one.restart() // SIGKILL, then the same flags: the secret is read back from the store
    assert.equal((await call(one.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, {})).status, 200)
    const elsewhere = await start(['--store', (await redis()).url])
    await refusedEverywhere(elsewhere.base, lease.body.leaseId, 'a lease id of another store')
    assert.equal((await call(two.base, 'DELETE', `/v1/leases/${lease.body.leaseId}`)).body.released, true)
  })

  it('--lease-secret: servers of another store given the same secret accept the id (the operator shares it)', async () => {
    const secret = 'an-operator-secret-0123456789abcdef'
    const [a, b] = [await start(['--store', store.url, '--lease-secret', secret]), await start(['--store', (await redis()).url, '--lease-secret', secret])]
    const lease = await call(a.base, 'POST', lockPath('shared-secret/op', '/acquire'), { ttl: '30s' })
    // The other store has no such hold: the id is read (not 404), and the store says the lease is gone.
    assert.equal((await call(b.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, {})).status, 410)
    // The servers keeping the store's secret do not know the operator's.
    assert.equal((await call(one.base, 'POST', `/v1/leases/${lease.body.leaseId}/extend`, {})).status, 404)
  })
})

describe('the default ttl and renewals obey the caps in force', () => {
  it('--max-ttl 5s: acquire, multi acquire, campaign and renewals without a ttl get 5 s; /v1/info and OpenAPI say so', async () => {
    const { base } = await start(['--max-ttl', '5s'])
    const single = await call(base, 'POST', lockPath('default-ttl/a', '/acquire'), {})
    assert.equal(single.status, 200)
    assert.ok(single.body.ttlMs <= 5000, `acquire: ${single.body.ttlMs}`)
    const extended = await call(base, 'POST', `/v1/leases/${single.body.leaseId}/extend`, {})
    assert.ok(extended.body.ttlMs <= 5000, `extend: ${extended.body.ttlMs}`)
    const batch = await call(base, 'POST', '/v1/leases/extend', { leases: [single.body.leaseId] })
    assert.ok(batch.body.results[0].ttlMs <= 5000, `batch extend: ${batch.body.results[0].ttlMs}`)
    const multi = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: 'default-ttl/b' }, { name: 'default-ttl/c' }] })
    assert.equal(multi.status, 200)
    for (const part of multi.body.leases) assert.ok(part.ttlMs <= 5000, `multi: ${part.ttlMs}`)
    const campaign = await call(base, 'POST', '/v1/elections/default-ttl%2Fd/campaign', { value: 'me' })
    assert.equal(campaign.status, 200, JSON.stringify(campaign.body))
    assert.ok(campaign.body.ttlMs <= 5000, `campaign: ${campaign.body.ttlMs}`)
    const info = await call(base, 'GET', '/v1/info')
    assert.equal(info.body.defaultTtlMs, 5000)
    assert.equal(info.body.maxTtlMs, 5000)
    const openapi = await call(base, 'GET', '/openapi.json')
    const acquireTtl = openapi.body.paths['/v1/locks/{name}/acquire'].post.requestBody.content['application/json'].schema.properties.ttl.description
    assert.match(acquireTtl, /default '5s'/)
  })

  it('a lease granted under larger caps renews to the cap in force (ttl) or not at all (lock delay)', async () => {
    const store = await redis()
    const secret = 'caps-test-secret-0123456789abcdef'
    const generous = await start(['--store', store.url, '--lease-secret', secret, '--max-ttl', '1m', '--max-lock-delay', '1m'])
    const strict = await start(['--store', store.url, '--lease-secret', secret, '--max-ttl', '10s', '--max-lock-delay', '1s'])
    const long = await call(generous.base, 'POST', lockPath('caps-now/ttl', '/acquire'), { ttl: '1m' })
    const renewed = await call(strict.base, 'POST', `/v1/leases/${long.body.leaseId}/extend`, {})
    assert.equal(renewed.status, 200)
    assert.ok(renewed.body.ttlMs <= 10_000, `renewed to ${renewed.body.ttlMs}`)
    const batch = await call(strict.base, 'POST', '/v1/leases/extend', { leases: [long.body.leaseId] })
    assert.ok(batch.body.results[0].ttlMs <= 10_000)
    const delayed = await call(generous.base, 'POST', lockPath('caps-now/delay', '/acquire'), { ttl: '5s', lockDelay: '30s' })
    const refused = await call(strict.base, 'POST', `/v1/leases/${delayed.body.leaseId}/extend`, {})
    assert.equal(refused.status, 400)
    assert.match(refused.body.error.message, /--max-lock-delay/)
    assert.equal((await call(strict.base, 'POST', '/v1/leases/extend', { leases: [delayed.body.leaseId] })).body.results[0].status, 'forbidden')
  })
})

describe('hold quotas across a restart', () => {
  it('leases renewed through the restarted server count against the token: no fresh quota per restart', async () => {
    const store = await redis()
    const token = 'quota-restart-token-0123456789'
    const server = await start(['--store', store.url, '--tokens', tokensFile([{ token }]), '--max-holds-per-token', '3'])
    const auth = bearer(token)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const lease = await call(server.base, 'POST', lockPath(`quota-restart/${i}`, '/acquire'), { ttl: '2m' }, auth)
      assert.equal(lease.status, 200)
      ids.push(lease.body.leaseId)
    }
    assert.equal((await call(server.base, 'POST', lockPath('quota-restart/over', '/acquire'), { ttl: '2m' }, auth)).status, 429)
    await server.restart() // SIGKILL: the new process has counted nothing
    // The client renews its leases through the new process (one per lease, the rest in a batch): each counts.
    assert.equal((await call(server.base, 'POST', `/v1/leases/${ids[0]}/extend`, {}, auth)).status, 200)
    const batch = await call(server.base, 'POST', '/v1/leases/extend', { leases: ids.slice(1) }, auth)
    assert.deepEqual(batch.body.results.map((r: { status: string }) => r.status), ['extended', 'extended'])
    const over = await call(server.base, 'POST', lockPath('quota-restart/over', '/acquire'), { ttl: '2m' }, auth)
    assert.equal(over.status, 429, JSON.stringify(over.body))
    assert.equal(over.body.error.code, 'QUOTA_EXCEEDED')
    // Released through it, they stop counting.
    assert.equal((await call(server.base, 'POST', '/v1/leases/release', { leaseId: ids[0] }, auth)).body.released, true)
    assert.equal((await call(server.base, 'POST', lockPath('quota-restart/over', '/acquire'), { ttl: '2m' }, auth)).status, 200)
  })
})
