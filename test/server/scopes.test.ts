/**
 * Token scopes: what a prefix covers (whole path segments), and list paging
 * that never tells a token of a name outside its scope, not even in a cursor.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { bearer, call, lockPath } from './client.js'

const ADMIN = 'scopes-admin-token-0123456789'
const A_READER = 'scopes-a-reader-token-012345'
const TEAM1 = 'scopes-team1-token-0123456789'

let server: BatonServer
let base: string

before(async () => {
  server = await startBatonServer(['--tokens', tokensFile([
    { token: ADMIN, rights: ['admin'] },
    { token: A_READER, prefixes: ['a/'], rights: ['read'] },
    { token: TEAM1, prefixes: ['team1'] },
  ])])
  base = server.base
})
after(() => server.stop())

/** Every page of GET /v1/locks for `token`, with the names each cursor decodes to. */
async function walk(token: string, prefix: string, limit: number): Promise<{ names: string[]; cursors: string[] }> {
  const names: string[] = []
  const cursors: string[] = []
  let cursor: string | undefined
  for (let pages = 0; pages < 100; pages++) {
    const query = `?limit=${limit}&prefix=${encodeURIComponent(prefix)}${cursor ? `&cursor=${cursor}` : ''}`
    const page = await call(base, 'GET', `/v1/locks${query}`, undefined, bearer(token))
    assert.equal(page.status, 200, JSON.stringify(page.body))
    names.push(...page.body.locks.map((l: { name: string }) => l.name))
    cursor = page.body.nextCursor
    if (!cursor) return { names, cursors }
    cursors.push(Buffer.from(cursor, 'base64url').toString('utf8'))
  }
  throw new Error('paging did not end')
}

describe('token scopes', () => {
  it('a cursor never encodes a name outside the token\'s scope', async () => {
    const held = ['a/1', 'a/3', 'b/customer-alice@example.com', 'b/customer-bob@example.com', 'a/2', 'c/z', 'a/4']
    for (const name of held) assert.equal((await call(base, 'POST', lockPath(name, '/acquire'), { ttl: '5m' }, bearer(ADMIN))).status, 200)
    for (const limit of [1, 2, 3]) {
      const { names, cursors } = await walk(A_READER, '', limit)
      assert.deepEqual(names, ['a/1', 'a/2', 'a/3', 'a/4'], `limit ${limit}`)
      for (const c of cursors) assert.ok(c.startsWith('a/'), `limit ${limit}: the cursor told of "${c}"`)
    }
    // The admin still sees everything, in order, across pages.
    const all = await walk(ADMIN, '', 2)
    assert.deepEqual(all.names, [...held].sort())
  })

  it('"team1" covers team1 and team1/…, never team10/…', async () => {
    assert.equal((await call(base, 'POST', lockPath('team1', '/acquire'), {}, bearer(TEAM1))).status, 200)
    assert.equal((await call(base, 'POST', lockPath('team1/x', '/acquire'), {}, bearer(TEAM1))).status, 200)
    const outside = await call(base, 'POST', lockPath('team10/y', '/acquire'), {}, bearer(TEAM1))
    assert.equal(outside.status, 403)
    assert.equal(outside.body.error.code, 'FORBIDDEN')
    assert.equal((await call(base, 'POST', lockPath('team10', '/acquire'), {}, bearer(TEAM1))).status, 403)
    assert.equal((await call(base, 'POST', lockPath('team10/y', '/acquire'), {}, bearer(ADMIN))).status, 200)
    assert.equal((await call(base, 'GET', lockPath('team10/y'), undefined, bearer(TEAM1))).status, 403)
    const { names } = await walk(TEAM1, 'team', 1)
    assert.deepEqual(names, ['team1', 'team1/x'])
    assert.equal((await call(base, 'GET', '/v1/locks?prefix=team10', undefined, bearer(TEAM1))).status, 403)
    assert.equal((await call(base, 'GET', '/v1/events?prefix=team10/', undefined, bearer(TEAM1))).status, 403)
  })
})
