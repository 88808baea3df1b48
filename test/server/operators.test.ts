/**
 * What operators expect of `baton serve`: Host/Origin checks, per-token
 * quotas, timeouts and a connection cap that leave long-polls alone, the
 * tokens file reloaded on SIGHUP, streamed answers not buffered by proxies
 * and counted in the metrics.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { connect as tcpConnect, type Socket } from 'node:net'
import { after, describe, it } from 'node:test'
import { TokenAuth } from '../../src/server/auth.js'
import type { LockServer } from '../../src/server/index.js'
import { startBatonServer, tokensFile, type BatonServer } from '../harness/baton-server.js'
import { startRedis } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { bearer, call, curl, lockPath } from './client.js'
import { openEvents, readUntil, startInProcess } from './in-process.js'

const ALICE = 'operators-alice-token-012345'
const BOB = 'operators-bob-token-01234567'
const sleep = (n: number) => new Promise((resolve) => setTimeout(resolve, n))

const children: BatonServer[] = []
const inProcess: LockServer[] = []
after(async () => {
  await Promise.all([...children.map((s) => s.stop()), ...inProcess.map((s) => s.close())])
})
async function child(args: string[]): Promise<BatonServer> {
  const server = await startBatonServer(args)
  children.push(server)
  return server
}
async function local(options: Parameters<typeof startInProcess>[0]): Promise<string> {
  const { server, base } = await startInProcess(options)
  inProcess.push(server)
  return base
}
/** Resolves when the server closes the socket (or rejects after `limitMs`). */
function closed(socket: Socket, limitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`the socket stayed open for ${limitMs} ms`)), limitMs)
    socket.on('data', (chunk) => (text += chunk.toString()))
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(text)
    })
  })
}
const open = (base: string) => new Promise<Socket>((resolve, reject) => {
  const url = new URL(base)
  const socket = tcpConnect(Number(url.port), url.hostname, () => resolve(socket))
  socket.once('error', reject)
})

describe('Host and Origin (open server on loopback)', () => {
  it('refuses foreign Host headers and cross-site browser requests; the dashboard\'s own origin passes', async () => {
    const server = await child([])
    const port = new URL(server.base).port
    // curl, since fetch does not let a caller set Host.
    const rebound = await curl(['-X', 'POST', '-H', `Host: evil.example:${port}`, `${server.base}${lockPath('origin/1', '/acquire')}`])
    assert.equal(rebound.status, 403)
    assert.equal(JSON.parse(rebound.body).error.code, 'FORBIDDEN')
    assert.match(JSON.parse(rebound.body).error.message, /--allowed-hosts/)
    assert.equal((await curl(['-H', 'Host: evil.example', `${server.base}/v1/locks`])).status, 403)
    // A cross-site POST with no body (what a web page can send without a preflight).
    const crossSite = await curl(['-X', 'POST', '-H', 'Origin: https://evil.example', `${server.base}${lockPath('origin/1', '/acquire')}`])
    assert.equal(crossSite.status, 403)
    assert.match(JSON.parse(crossSite.body).error.message, /--allowed-origins/)
    assert.equal((await call(server.base, 'GET', lockPath('origin/1'))).status, 404, 'nothing was acquired')
    const own = await curl(['-X', 'POST', '-H', `Origin: http://127.0.0.1:${port}`, `${server.base}${lockPath('origin/1', '/acquire')}`])
    assert.equal(own.status, 200)
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      assert.equal((await curl(['-H', `Host: ${host}`, `${server.base}/v1/info`])).status, 200, host)
    }
    assert.equal((await curl(['-H', 'Host: evil.example', `${server.base}/healthz`])).status, 200, 'probes are not checked')
  })

  it('--allowed-hosts and --allowed-origins add names', async () => {
    const server = await child(['--allowed-hosts', 'baton.internal', '--allowed-origins', 'https://ops.example'])
    assert.equal((await curl(['-H', 'Host: baton.internal:7420', `${server.base}/v1/info`])).status, 200)
    assert.equal((await curl(['-H', 'Host: other.internal', `${server.base}/v1/info`])).status, 403)
    assert.equal((await curl(['-X', 'POST', '-H', 'Origin: https://ops.example', `${server.base}${lockPath('origin/2', '/acquire')}`])).status, 200)
    assert.equal((await curl(['-X', 'POST', '-H', 'Origin: https://evil.example', `${server.base}${lockPath('origin/3', '/acquire')}`])).status, 403)
  })
})

describe('per-token quotas', () => {
  it('waiters, streams and holds: 429 for the token over its quota, the others go on', async () => {
    const auth = TokenAuth.load(tokensFile([{ token: ALICE }, { token: BOB }]))
    const base = await local({ auth, quotas: { waiters: 1, streams: 1, holds: 2 } })
    const quotaError = (answer: { status: number; body: any; headers: Headers }) => {
      assert.equal(answer.status, 429)
      assert.equal(answer.body.error.code, 'QUOTA_EXCEEDED')
      assert.ok(Number(answer.headers.get('retry-after')) >= 1)
    }
    // Holds
    const one = await call(base, 'POST', lockPath('quota/1', '/acquire'), {}, bearer(ALICE))
    assert.equal((await call(base, 'POST', lockPath('quota/2', '/acquire'), {}, bearer(ALICE))).status, 200)
    quotaError(await call(base, 'POST', lockPath('quota/3', '/acquire'), {}, bearer(ALICE)))
    assert.equal((await call(base, 'POST', lockPath('quota/3', '/acquire'), {}, bearer(BOB))).status, 200)
    await call(base, 'DELETE', `/v1/leases/${one.body.leaseId}`, undefined, bearer(ALICE))
    const four = await call(base, 'POST', lockPath('quota/4', '/acquire'), {}, bearer(ALICE))
    assert.equal(four.status, 200, 'a release gives the hold back')
    await call(base, 'DELETE', `/v1/leases/${four.body.leaseId}`, undefined, bearer(ALICE))
    // A set takes one hold per name: Alice holds 1 of 2, so a set of 2 more is over, and takes nothing.
    const set = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: 'quota/5' }, { name: 'quota/6' }] }, bearer(ALICE))
    quotaError(set)
    assert.equal((await call(base, 'GET', lockPath('quota/5'), undefined, bearer(ALICE))).status, 404, 'the refused set took nothing')
    const fits = await call(base, 'POST', '/v1/multi/acquire', { locks: [{ name: 'quota/5' }] }, bearer(ALICE))
    assert.equal(fits.status, 200, 'a set within the quota')
    await call(base, 'POST', '/v1/multi/release', { leases: fits.body.leases.map((l: { leaseId: string }) => l.leaseId) }, bearer(ALICE))
    // Waiters: quota/3 is Bob's; Alice may wait for it once, not twice.
    const waiting = call(base, 'POST', lockPath('quota/3', '/acquire'), { wait: ms(1500) }, bearer(ALICE))
    await sleep(ms(200))
    const second = call(base, 'POST', lockPath('quota/3', '/acquire'), { wait: ms(1500) }, bearer(BOB))
    const bobStuck = await call(base, 'POST', lockPath('quota/3', '/acquire'), {}, bearer(BOB))
    assert.equal(bobStuck.status, 409, 'Bob is answered as usual')
    quotaError(await call(base, 'POST', lockPath('quota/3', '/acquire'), { wait: ms(1500) }, bearer(ALICE)))
    assert.equal((await waiting).status, 409)
    assert.equal((await second).status, 409)
    // Streams
    const stream = await openEvents(base, bearer(ALICE))
    assert.equal(stream.statusCode, 200)
    const refused = await openEvents(base, bearer(ALICE))
    assert.equal(refused.statusCode, 429)
    refused.resume()
    const bobs = await openEvents(base, bearer(BOB))
    assert.equal(bobs.statusCode, 200)
    bobs.destroy()
    stream.destroy()
    await sleep(ms(100))
    const again = await openEvents(base, bearer(ALICE))
    assert.equal(again.statusCode, 200, 'a closed stream gives its place back')
    again.destroy()
  })
})

describe('per-token holds quota under a burst (a store that answers asynchronously)', () => {
  it('parallel acquires and sets that all passed the check before their grants: never more holds than the quota', async () => {
    const redis = await startRedis()
    try {
      const server = await child(['--store', `redis://127.0.0.1:${redis.port}`, '--tokens', tokensFile([{ token: ALICE }]), '--max-holds-per-token', '2'])
      const singles = await Promise.all(Array.from({ length: 20 }, (_, i) => call(server.base, 'POST', lockPath(`burst/${i}`, '/acquire'), {}, bearer(ALICE))))
      const granted = singles.filter((answer) => answer.status === 200)
      assert.ok(granted.length <= 2, `${granted.length} of 20 parallel acquires were granted against a quota of 2`)
      for (const answer of singles) if (answer.status !== 200) assert.equal(answer.body.error.code, 'QUOTA_EXCEEDED')
      for (const answer of granted) await call(server.base, 'DELETE', `/v1/leases/${answer.body.leaseId}`, undefined, bearer(ALICE))
      const sets = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        call(server.base, 'POST', '/v1/multi/acquire', { locks: [{ name: `burst/set${i}/a` }, { name: `burst/set${i}/b` }] }, bearer(ALICE))))
      const setsGranted = sets.filter((answer) => answer.status === 200)
      assert.ok(setsGranted.length <= 1, `${setsGranted.length} parallel sets of 2 were granted against a quota of 2`)
      // The refused ones gave their grants back: only the granted sets' names are held.
      const held = (await call(server.base, 'GET', '/v1/locks?prefix=burst%2F', undefined, bearer(ALICE))).body.locks
        .filter((lock: { holders?: unknown[] }) => (lock.holders?.length ?? 1) > 0)
      assert.equal(held.length, setsGranted.length * 2, JSON.stringify(held).slice(0, 300))
    } finally {
      await redis.stop()
    }
  })
})

describe('timeouts and connections', () => {
  it('a request whose headers never end is cut; a long-poll is not', async () => {
    const base = await local({ headersTimeoutMs: ms(500), requestTimeoutMs: ms(800), timeoutCheckMs: 100 })
    const slow = await open(base)
    slow.write('GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    const answer = await closed(slow, ms(10_000))
    assert.match(answer, /^HTTP\/1.1 408|^$/, 'cut (408 or closed)')
    // A long-poll well past both timeouts is answered at its own end.
    assert.equal((await call(base, 'POST', lockPath('timeouts/1', '/acquire'), {})).status, 200)
    const poll = await call(base, 'POST', lockPath('timeouts/1', '/acquire'), { wait: ms(2500) })
    assert.equal(poll.status, 409)
    assert.equal(poll.body.error.code, 'LOCK_TIMEOUT')
  })

  it('connections beyond --max-connections are closed at once', async () => {
    const base = await local({ maxConnections: 3 })
    const held = await Promise.all([open(base), open(base), open(base)])
    await sleep(ms(100))
    const extra = await open(base)
    await closed(extra, ms(5000))
    held[0]!.destroy()
    await sleep(ms(200))
    assert.equal((await call(base, 'GET', '/v1/info')).status, 200)
    for (const socket of held) socket.destroy()
  })
})

describe('SIGHUP', () => {
  it('reloads the tokens file: a revoked token stops at once; a bad file keeps the tokens in force', async () => {
    const file = tokensFile([{ token: ALICE }, { token: BOB }])
    const server = await child(['--tokens', file])
    assert.equal((await call(server.base, 'GET', '/v1/locks', undefined, bearer(ALICE))).status, 200)
    writeFileSync(file, JSON.stringify([{ token: BOB }]))
    process.kill(server.pid, 'SIGHUP')
    const deadline = Date.now() + ms(10_000)
    while ((await call(server.base, 'GET', '/v1/locks', undefined, bearer(ALICE))).status !== 401) {
      assert.ok(Date.now() < deadline, 'the revoked token stopped working')
      await sleep(50)
    }
    assert.equal((await call(server.base, 'GET', '/v1/locks', undefined, bearer(BOB))).status, 200)
    writeFileSync(file, '[{"token": ')
    process.kill(server.pid, 'SIGHUP')
    while (!/kept the previous tokens/.test(server.output())) {
      assert.ok(Date.now() < deadline, 'the bad file was reported')
      await sleep(50)
    }
    assert.match(server.output(), /reloaded 1 tokens/)
    assert.equal((await call(server.base, 'GET', '/v1/locks', undefined, bearer(BOB))).status, 200)
    assert.equal((await call(server.base, 'GET', '/healthz')).status, 200, 'still running')
  })
})

describe('streamed answers', () => {
  it('say x-accel-buffering: no, and count in the metrics with long-polls the client left', async () => {
    const base = await local({})
    const events = await openEvents(base)
    assert.equal(events.headers['x-accel-buffering'], 'no')
    await readUntil(events, (t) => t.includes('id: '))
    events.destroy()
    assert.equal((await call(base, 'POST', lockPath('streamed/1', '/acquire'), {})).status, 200)
    const ndjson = await fetch(`${base}${lockPath('streamed/1', '/acquire')}`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-ndjson' }, body: JSON.stringify({ wait: ms(300) }),
    })
    assert.equal(ndjson.headers.get('x-accel-buffering'), 'no')
    await ndjson.text()
    // A long-poll the client gives up on.
    const left = new AbortController()
    const abandoned = fetch(`${base}${lockPath('streamed/1', '/acquire')}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ wait: ms(5000) }), signal: left.signal,
    }).catch(() => undefined)
    await sleep(ms(200))
    left.abort()
    await abandoned
    await sleep(ms(200))
    const text = (await call(base, 'GET', '/metrics')).body as string
    const count = (route: string, status: string) => Number(
      text.split('\n').find((l) => l.startsWith('baton_http_request_duration_seconds_count') && l.includes(`route="${route}"`) && l.includes(`status="${status}"`))?.split(' ').pop() ?? 0,
    )
    assert.equal(count('/v1/events', '200'), 1, 'the event stream')
    const acquires = ['200', '409', '499'].reduce((sum, status) => sum + count('/v1/locks/:name/acquire', status), 0)
    assert.equal(acquires, 3, 'the plain acquire, the streamed one, and the long-poll the client left')
    assert.equal(count('/v1/locks/:name/acquire', '499'), 1, 'the long-poll the client left')
  })
})
