/**
 * Sessions under a hostile tenant (issue 27, items 2 and 3), on a real
 * `baton serve` with tokens: sessions count against the token that opens
 * them, an `http://` client refused a session still works (renewing lease by
 * lease, with a warning), and only the token that opened a session may act
 * on it.
 */
import assert from 'node:assert/strict'
import diagnostics_channel from 'node:diagnostics_channel'
import { after, before, describe, it } from 'node:test'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { ms } from '../harness/timing.js'
import { connect } from '../../src/index.js'

/** What the baton:warning channel carries (src/core/events.ts). */
interface WarningEvent {
  store: string
  code: string
  message: string
}
import { bearer, call, lockPath } from './client.js'

const SESSIONS_PER_TOKEN = 4
const TOKENS = {
  flooder: 'flooder-token-aaaaaaaaaaaaaaaa',
  other: 'other-tenant-token-bbbbbbbbbbbb',
  reader: 'read-only-token-cccccccccccccccc',
  foreign: 'foreign-prefix-token-dddddddddd',
  owner: 'session-owner-token-eeeeeeeeeeee',
}

let server: BatonServer
let seq = 0
const fresh = (prefix: string, label: string) => `${prefix}/${label}/${++seq}/${Math.random().toString(36).slice(2, 8)}`
const sleep = (msToWait: number) => new Promise((r) => setTimeout(r, msToWait))
const as = (token: string) => bearer(token)
const urlOf = (token: string) => `http://:${token}@127.0.0.1:${server.port}`

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms(20_000)
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(ms(100))
  }
}

/** Opens sessions with `token` until the server refuses one; returns the ids opened and the refusal. */
async function flood(token: string): Promise<{ ids: string[]; refusal: { status: number; body: any } }> {
  const ids: string[] = []
  for (;;) {
    const answer = await call(server.base, 'POST', '/v1/sessions', { ttl: '60s' }, as(token))
    if (answer.status !== 201) return { ids, refusal: answer }
    ids.push(answer.body.sessionId)
    assert.ok(ids.length <= SESSIONS_PER_TOKEN, `one token opened ${ids.length} sessions past its quota of ${SESSIONS_PER_TOKEN}`)
  }
}

before(async () => {
  const tokens = tokensFile([
    { token: TOKENS.flooder, prefixes: ['a/'] },
    { token: TOKENS.other, prefixes: ['b/'] },
    { token: TOKENS.reader, prefixes: ['c/'], rights: ['read'] },
    { token: TOKENS.foreign, prefixes: ['d/'] },
    { token: TOKENS.owner, prefixes: ['c/'] },
  ])
  server = await startBatonServer(['--tokens', tokens, '--max-sessions-per-token', String(SESSIONS_PER_TOKEN)])
})
after(() => server.stop())

describe('sessions count against their token (--max-sessions-per-token)', () => {
  it('one token flooding sessions leaves other tenants and its own http:// client working', async () => {
    const warnings: WarningEvent[] = []
    const onWarning = (message: unknown) => void warnings.push(message as WarningEvent)
    diagnostics_channel.subscribe('baton:warning', onWarning)
    const flooded = await flood(TOKENS.flooder)
    try {
      assert.equal(flooded.ids.length, SESSIONS_PER_TOKEN)
      assert.equal(flooded.refusal.status, 429)
      assert.equal(flooded.refusal.body.error.code, 'QUOTA_EXCEEDED')

      // Another tenant: its client opens its own session and acquires, untouched by the flood.
      const other = await connect(urlOf(TOKENS.other))
      const otherLease = await other.mutex(fresh('b', 'other'), { ttl: ms(5000) }).acquire({ wait: ms(10_000) })
      assert.equal(warnings.length, 0, `the other tenant was refused a session: ${JSON.stringify(warnings)}`)
      await otherLease.release()
      await other.close()

      // The flooding tenant's own client: refused a session, it renews lease by lease and keeps its hold.
      const own = await connect(urlOf(TOKENS.flooder))
      const ttlMs = ms(1500)
      const lease = await own.mutex(fresh('a', 'own'), { ttl: ttlMs }).acquire({ wait: ms(10_000), autoExtend: true })
      assert.ok(warnings.some((w) => w.store === 'http' && w.code === 'SESSION_REFUSED' && /QUOTA_EXCEEDED/.test(w.message)),
        `no SESSION_REFUSED warning: ${JSON.stringify(warnings)}`)
      await sleep(ttlMs * 4)
      assert.equal(lease.signal.aborted, false, `the hold renewed lease by lease was lost: ${String(lease.signal.reason)}`)

      // The flood ends: the client asks again later and gets a session (one of the token's four is in use).
      for (const id of flooded.ids.splice(0)) assert.equal((await call(server.base, 'DELETE', `/v1/sessions/${id}`, undefined, as(TOKENS.flooder))).status, 200)
      await eventually('the refused client to open a session again', async () => {
        const next = await own.mutex(fresh('a', 'again'), { ttl: ms(5000) }).acquire({ wait: ms(10_000) })
        await next.release()
        const probe = await flood(TOKENS.flooder)
        flooded.ids.push(...probe.ids)
        for (const id of flooded.ids.splice(0)) await call(server.base, 'DELETE', `/v1/sessions/${id}`, undefined, as(TOKENS.flooder))
        return probe.ids.length === SESSIONS_PER_TOKEN - 1
      })
      assert.equal(lease.signal.aborted, false)
      await lease.release()
      await own.close()
    } finally {
      diagnostics_channel.unsubscribe('baton:warning', onWarning)
      for (const id of flooded.ids) await call(server.base, 'DELETE', `/v1/sessions/${id}`, undefined, as(TOKENS.flooder))
    }
  })
})

describe('session routes need the token that opened the session', () => {
  it('a read-only token and another prefix\'s token can neither keep alive nor end a session, nor use it', async () => {
    const name = fresh('c', 'owned')
    const opened = await call(server.base, 'POST', '/v1/sessions', { ttl: '30s' }, as(TOKENS.owner))
    assert.equal(opened.status, 201)
    const sessionId = opened.body.sessionId as string
    const grant = await call(server.base, 'POST', lockPath(name, '/acquire'), { ttl: '30s' }, as(TOKENS.owner))
    assert.equal(grant.status, 200)
    const joined = await call(server.base, 'POST', '/v1/leases/extend', { leases: [grant.body.leaseId], ttl: '30s', session: sessionId }, as(TOKENS.owner))
    assert.equal(joined.body.session, true)

    for (const [who, token] of [['read-only', TOKENS.reader], ['foreign prefix', TOKENS.foreign]] as const) {
      const attempts = {
        'keepalive (path)': await call(server.base, 'POST', `/v1/sessions/${sessionId}/keepalive`, {}, as(token)),
        'keepalive (body)': await call(server.base, 'POST', '/v1/sessions/keepalive', { sessionId }, as(token)),
        'keepalive giving up the lease': await call(server.base, 'POST', '/v1/sessions/keepalive', { sessionId, giveUp: [grant.body.leaseId] }, as(token)),
        delete: await call(server.base, 'DELETE', `/v1/sessions/${sessionId}`, undefined, as(token)),
      }
      for (const [route, answer] of Object.entries(attempts)) {
        // 404, as for an id that does not exist: the token can not tell a live session from a made-up id.
        assert.equal(answer.status, 404, `${who} token, ${route}: ${answer.status} ${JSON.stringify(answer.body)}`)
        assert.equal(answer.body.error.code, 'NOT_FOUND')
      }
      const unknown = await call(server.base, 'DELETE', `/v1/sessions/${'x'.repeat(sessionId.length)}`, undefined, as(token))
      assert.deepEqual(unknown.body.error.code, attempts.delete.body.error.code)
    }
    // Nor may another token hang its own waits or leases on the session.
    const foreignName = fresh('d', 'joiner')
    const foreignWait = await call(server.base, 'POST', lockPath(foreignName, '/acquire'), { ttl: '5s', wait: '1s', session: sessionId }, as(TOKENS.foreign))
    assert.equal(foreignWait.status, 404)
    const foreignGrant = await call(server.base, 'POST', lockPath(foreignName, '/acquire'), { ttl: '5s' }, as(TOKENS.foreign))
    const foreignJoin = await call(server.base, 'POST', '/v1/leases/extend', { leases: [foreignGrant.body.leaseId], session: sessionId }, as(TOKENS.foreign))
    assert.equal(foreignJoin.body.session, false)
    assert.equal(foreignJoin.body.results[0].status, 'extended')
    // A token that may lock nothing opens no session.
    const readerSession = await call(server.base, 'POST', '/v1/sessions', {}, as(TOKENS.reader))
    assert.equal(readerSession.status, 403)

    // The lease is still held, and still the owner's session's.
    const view = await call(server.base, 'GET', lockPath(name), undefined, as(TOKENS.owner))
    assert.equal(view.status, 200)
    assert.equal(view.body.holders.length, 1)
    const kept = await call(server.base, 'POST', '/v1/sessions/keepalive', { sessionId }, as(TOKENS.owner))
    assert.equal(kept.status, 200)
    assert.equal(kept.body.leases, 1)
    const ended = await call(server.base, 'DELETE', `/v1/sessions/${sessionId}`, undefined, as(TOKENS.owner))
    assert.deepEqual(ended.body, { released: true })
    assert.equal((await call(server.base, 'GET', lockPath(name), undefined, as(TOKENS.owner))).status, 404)
    await call(server.base, 'POST', '/v1/leases/release', { leaseId: foreignGrant.body.leaseId }, as(TOKENS.foreign))
  })
})
