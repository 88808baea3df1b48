/** Pure parts of the server: config precedence, lease ids, the tokens file. */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { resolveServeConfig } from '../../src/cli/config.js'
import { isBatonError } from '../../src/index.js'
import { TokenAuth } from '../../src/server/auth.js'
import { LeaseIds, ownerDigest } from '../../src/server/lease-id.js'
import { tempDir } from '../harness/baton-server.js'

describe('serve config', () => {
  it('flags win over BATON_* variables, which win over defaults', () => {
    assert.deepEqual(resolveServeConfig({}, {}), { store: undefined, host: '127.0.0.1', port: 7420, dataDir: undefined, tokensFile: undefined })
    const env = { BATON_URL: 'redis://a:1', BATON_HOST: '0.0.0.0', BATON_PORT: '8000', BATON_DATA_DIR: '/d', BATON_TOKENS_FILE: '/t' }
    assert.deepEqual(resolveServeConfig({}, env), { store: 'redis://a:1', host: '0.0.0.0', port: 8000, dataDir: '/d', tokensFile: '/t' })
    assert.equal(resolveServeConfig({ port: '9000', host: '::1' }, env).port, 9000)
    assert.equal(resolveServeConfig({ port: '9000', host: '::1' }, env).host, '::1')
    for (const port of ['x', '-1', '70000', '1.5']) assert.throws(() => resolveServeConfig({ port }, {}), (e) => isBatonError(e, 'INVALID_ARGUMENT'))
  })
})

describe('lease ids', () => {
  const ids = new LeaseIds('unit-test-secret-0123456789')
  const ref = {
    name: 'orders/42', kind: 'mutex', mode: 'exclusive', permits: 1, fair: false, lockDelayMs: 0,
    owner: 'abcdefgh.AAAAAAAAAAAAAAAAAAAAAA', token: 12345678901234567890n, ttlMs: 30_000,
  } as const
  it('round-trip, tokens past 2^53 included, every kind and mode', () => {
    assert.deepEqual(ids.decode(ids.encode(ref, ref.ttlMs)), ref)
    const semaphore = { ...ref, name: 'gpu/é', kind: 'semaphore', mode: 'permit', permits: 1_000_000, fair: true, lockDelayMs: 2 ** 31 - 1, ttlMs: 1 } as const
    assert.deepEqual(ids.decode(ids.encode(semaphore, semaphore.ttlMs)), semaphore)
    const write = { ...ref, kind: 'rwlock', mode: 'write', token: 1n } as const
    assert.deepEqual(ids.decode(ids.encode(write, write.ttlMs)), write)
  })
  it('weighted permits: the weight round-trips; a weight of 1 leaves the id as before', () => {
    const permit = { ...ref, kind: 'semaphore', mode: 'permit', permits: 8 } as const
    const weighted = { ...permit, weight: 3 } as const
    assert.deepEqual(ids.decode(ids.encode(weighted, weighted.ttlMs)), weighted)
    assert.equal(ids.encode({ ...permit, weight: 1 }, permit.ttlMs), ids.encode(permit, permit.ttlMs))
    assert.deepEqual(ids.decode(ids.encode({ ...permit, weight: 1 }, permit.ttlMs)), permit)
    for (const bad of [{ ...permit, weight: 9 }, { ...ref, weight: 2 }]) {
      assert.equal(ids.decode(ids.encode(bad as never, ref.ttlMs)), null, JSON.stringify(bad, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
    }
  })
  it('anything else is not a lease id', () => {
    const bytes = Buffer.from(ids.encode(ref, ref.ttlMs), 'base64url')
    const id = (b: Buffer) => b.toString('base64url')
    const other = (patch: Partial<Record<keyof typeof ref, unknown>>) => id(Buffer.from(ids.encode({ ...ref, ...patch } as never, (patch.ttlMs as number) ?? ref.ttlMs), 'base64url'))
    const variants = [
      id(bytes.subarray(0, 7)), id(Buffer.concat([Buffer.from([1]), bytes.subarray(1)])), // truncated, old version
      id(Buffer.concat([bytes.subarray(0, 1), Buffer.from([3]), bytes.subarray(2)])), // mutex with mode 0b11
      id(Buffer.concat([bytes.subarray(0, 1), Buffer.from([1]), bytes.subarray(2)])), // rwlock, exclusive
      other({ permits: 2 }), other({ owner: 'short.owner' }), other({ token: -1n }), other({ token: 0n }),
      other({ name: 'a\u0000b' }), other({ ttlMs: 0 }),
    ]
    for (const v of variants) assert.equal(ids.decode(v), null, v)
    // Any byte changed, the MAC cut short, or a MAC under another secret: not a lease id.
    for (let i = 0; i < bytes.length; i++) {
      const edited = Buffer.from(bytes)
      edited[i] = edited[i]! ^ 1
      assert.equal(ids.decode(id(edited)), null, `byte ${i} edited`)
    }
    assert.equal(ids.decode(id(bytes.subarray(0, bytes.length - 1))), null)
    assert.equal(new LeaseIds('another-secret-0123456789').decode(id(bytes)), null)
    // A secret replaced: ids under the one before stay good, new ones are minted under the new one.
    const rekeyed = new LeaseIds('unit-test-secret-0123456789')
    rekeyed.rekey('the-store-secret-0123456789')
    assert.deepEqual(rekeyed.decode(id(bytes)), ref)
    assert.equal(ids.decode(rekeyed.encode(ref, ref.ttlMs)), null)
    for (const text of ['', '!!', 'x'.repeat(2000), Buffer.from('{').toString('base64url')]) assert.equal(ids.decode(text), null)
  })
  it('the owner digest is stable and reveals nothing of the owner', () => {
    assert.equal(ownerDigest(ref.owner), ownerDigest(ref.owner))
    assert.notEqual(ownerDigest(ref.owner), ownerDigest(`${ref.owner}x`))
    assert.ok(!ref.owner.includes(ownerDigest(ref.owner)))
  })
})

describe('tokens file', () => {
  const file = (content: string) => {
    const path = join(tempDir('tokens-unit'), 'tokens.json')
    writeFileSync(path, content)
    return path
  }
  it('refuses bad files with a message naming the entry, never the token', () => {
    const secret = 'a-secret-token-of-some-length'
    for (const content of ['nope', '{}', '[]', JSON.stringify([{ token: 'short' }]), JSON.stringify([{ token: secret, rights: ['write'] }]),
      JSON.stringify([{ token: secret, prefixes: [] }]), JSON.stringify([{ token: secret, colour: 'red' }])]) {
      assert.throws(() => TokenAuth.load(file(content)), (e) => isBatonError(e, 'INVALID_ARGUMENT') && !e.message.includes(secret), content)
    }
  })
  it('rights imply each other; prefixes limit names', () => {
    const auth = TokenAuth.load(file(JSON.stringify([{ token: 'admin-token-0123456789', rights: ['admin'] }, { token: 'orders-token-0123456789', prefixes: ['orders/'] }])))
    const admin = auth.check('Bearer admin-token-0123456789')
    assert.ok(admin.allows('read', 'x') && admin.allows('lock', 'x') && admin.allows('admin', 'x') && admin.everyName)
    const orders = auth.check('bearer orders-token-0123456789')
    assert.ok(orders.allows('lock', 'orders/1') && orders.allows('read', 'orders/1'))
    assert.ok(!orders.allows('admin', 'orders/1') && !orders.allows('lock', 'users/1') && !orders.everyName)
    assert.throws(() => auth.check(undefined))
    assert.throws(() => auth.check('Bearer nope-nope-nope-nope'))
  })
})
