/**
 * The resource side of fencing, against the real things: a private
 * PostgreSQL, a private redis-server, node:http, express and fastify. Each
 * store part also plays the end-to-end story: a holder whose lease ran out
 * (it was frozen past its ttl) has its write refused once the next holder
 * has written.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import pg from 'pg'
import { Redis } from 'ioredis'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import {
  advanceFence, decodeLockHeader, encodeLockHeader, fenceKeyOf, fencingHeaders, HttpFence, MemoryFence, parseFencingToken, PostgresFence, RedisFence,
} from '../../src/fencing/index.js'
import { connect as netConnect } from 'node:net'
import { startPostgres, type PostgresServer } from '../harness/postgres.js'
import { makeTempDir, startRedis, type RedisServer } from '../harness/servers.js'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ms } from '../harness/timing.js'

const isStale = (error: unknown): boolean => isBatonError(error, 'STALE_TOKEN')

/** Holder A's lease runs out without renewal (as if A were frozen), then B takes the name. */
async function staleAndFreshHolders(baton: Baton, name: string) {
  const a = await baton.mutex(name, { ttl: '300ms' }).acquire()
  await new Promise((resolve) => setTimeout(resolve, 700))
  assert.equal(a.signal.aborted, true, "A's lease ran out")
  const b = await baton.mutex(name, { ttl: '10s' }).acquire({ wait: '5s' })
  assert.ok(b.token > a.token)
  return { a, b }
}

describe('fencing tokens and their guards', () => {
  it('parses tokens strictly and refuses bad ones with INVALID_ARGUMENT', () => {
    assert.equal(parseFencingToken('0'), 0n)
    assert.equal(parseFencingToken('18446744073709551616'), 18446744073709551616n)
    assert.equal(parseFencingToken(42), 42n)
    for (const bad of ['', '-1', '01', '1.5', ' 7', 'abc', '1e3', '9'.repeat(40)]) {
      assert.throws(() => parseFencingToken(bad), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'), bad)
    }
    assert.throws(() => parseFencingToken(-1n), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
    assert.throws(() => parseFencingToken(2 ** 60), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
  })

  it('advanceFence: equal tokens pass (same holder), lower ones are refused with the evidence', async () => {
    const cell = new MemoryFence()
    assert.equal(await advanceFence(cell, 'r', 5n), 5n)
    assert.equal(await advanceFence(cell, 'r', 5n), 5n)
    assert.equal(await advanceFence(cell, 'r', '9'), 9n)
    await assert.rejects(advanceFence(cell, 'r', 8n), (e: unknown) => isStale(e) && /8 is below 9/.test((e as Error).message))
    assert.equal(await cell.read('r'), 9n)
    await assert.rejects(advanceFence(cell, '', 10n), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
  })

  it('advanceFence: concurrent writers over a slow compare-and-set end at the highest token', async () => {
    const inner = new MemoryFence()
    const slow = {
      read: async (r: string) => { await new Promise((res) => setImmediate(res)); return inner.read(r) },
      compareAndSet: async (r: string, e: bigint | undefined, n: bigint) => { await new Promise((res) => setImmediate(res)); return inner.compareAndSet(r, e, n) },
    }
    const tokens = Array.from({ length: 40 }, (_, i) => BigInt((i * 7919) % 40))
    const results = await Promise.allSettled(tokens.map((t) => advanceFence(slow, 'x', t)))
    assert.equal(await inner.read('x'), 39n)
    assert.ok(results.every((r) => r.status === 'fulfilled' || isStale(r.reason)))
  })

  describe('PostgreSQL', () => {
    let server: PostgresServer
    let pool: pg.Pool
    const closed: Promise<unknown>[] = []
    let baton: Baton
    const fence = new PostgresFence()

    before(async () => {
      server = await startPostgres()
      pool = new pg.Pool({ connectionString: server.url, max: 8 })
      // pool.end() resolves before its sockets close: `after` waits for each to end
      // before stopping the server, whose goodbye on them would be an uncaught error.
      pool.on('connect', (client) => {
        client.on('error', () => {})
        closed.push(new Promise((resolve) => client.once('end', resolve)))
      })
      await fence.install(pool)
      await fence.install(pool) // idempotent
      await pool.query('CREATE TABLE ledger (id int PRIMARY KEY, balance int NOT NULL, writer_token numeric)')
      await pool.query('CREATE TABLE writes (seq serial PRIMARY KEY, token numeric NOT NULL)')
      await pool.query('INSERT INTO ledger VALUES (1, 0, NULL)')
      baton = await connect(server.url)
    })
    after(async () => {
      await baton?.close()
      await pool?.end()
      await Promise.all(closed)
      await server?.stop()
    })

    it('a stale holder frozen past its ttl has its write refused, and its transaction rolled back', async () => {
      const { a, b } = await staleAndFreshHolders(baton, 'ledger/1')
      await fence.run(pool, b.name, b.token, (db) => db.query('UPDATE ledger SET balance = balance + 10, writer_token = $1 WHERE id = 1', [b.token.toString()]))
      await assert.rejects(
        fence.run(pool, a.name, a.token, (db) => db.query('UPDATE ledger SET balance = balance + 1000 WHERE id = 1')),
        (e: unknown) => isStale(e) && (e as Error).message.includes(String(b.token)),
      )
      const [row] = (await pool.query('SELECT balance, writer_token::text AS t FROM ledger WHERE id = 1')).rows
      assert.deepEqual(row, { balance: 10, t: b.token.toString() })
      await b.release()
    })

    it('concurrent writers with shuffled tokens: accepted writes are ordered by token', async () => {
      const tokens = Array.from({ length: 60 }, (_, i) => BigInt(1_000 + ((i * 37) % 60)))
      const outcomes = await Promise.allSettled(tokens.map((token) =>
        fence.run(pool, 'orders', token, async (db) => {
          await db.query('SELECT pg_sleep(0.002)')
          await db.query('INSERT INTO writes (token) VALUES ($1)', [token.toString()])
        })))
      assert.ok(outcomes.every((o) => o.status === 'fulfilled' || isStale(o.reason)), 'only STALE_TOKEN refusals')
      const accepted = (await pool.query('SELECT token::text AS token FROM writes ORDER BY seq')).rows.map((r) => BigInt(r.token))
      assert.ok(accepted.length >= 1)
      for (let i = 1; i < accepted.length; i++) assert.ok(accepted[i]! >= accepted[i - 1]!, `write ${i} went back from ${accepted[i - 1]} to ${accepted[i]}`)
      assert.equal(accepted.length, outcomes.filter((o) => o.status === 'fulfilled').length)
      assert.equal((await pool.query("SELECT token::text AS t FROM baton_fences WHERE resource = 'orders'")).rows[0].t, String(accepted.at(-1)))
    })

    it('bad input is INVALID_ARGUMENT and touches nothing', async () => {
      assert.throws(() => new PostgresFence({ table: 'x; DROP TABLE ledger' }), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
      await assert.rejects(fence.run(pool, 'orders', '-5', async () => assert.fail('must not write')), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
      assert.equal((await pool.query('SELECT count(*)::int AS n FROM ledger')).rows[0].n, 1)
    })
  })

  describe('Redis', () => {
    let server: RedisServer
    let client: Redis
    let baton: Baton

    before(async () => {
      server = await startRedis()
      client = new Redis(server.url)
      baton = await connect(server.url)
    })
    after(async () => {
      await baton?.close()
      client?.disconnect()
      await server?.stop()
    })

    it('a stale holder frozen past its ttl has its write refused', async () => {
      const fence = new RedisFence(client)
      const { a, b } = await staleAndFreshHolders(baton, 'report/daily')
      await fence.set('report:{daily}', 'from B', b.token, { ttl: '1m' })
      await assert.rejects(fence.set('report:{daily}', 'from A', a.token), isStale)
      await assert.rejects(fence.del('report:{daily}', a.token), isStale)
      assert.equal(await client.get('report:{daily}'), 'from B')
      assert.ok((await client.pttl('report:{daily}')) > 0)
      await fence.del('report:{daily}', b.token)
      assert.equal(await client.exists('report:{daily}'), 0)
      await b.release()
    })

    it('compares tokens past 2^53 exactly, and survives a script cache flush', async () => {
      const fence = new RedisFence(client)
      await fence.set('big', '1', 9007199254740993n)
      await assert.rejects(fence.set('big', '2', 9007199254740992n), isStale)
      await client.script('FLUSH')
      await fence.set('big', '3', 9007199254740993n)
      await fence.set('big', '4', 10000000000000000000n)
      assert.equal(await client.get('big'), '4')
    })

    it('puts the fence in the data key slot', () => {
      assert.equal(fenceKeyOf('user:{42}:profile'), 'baton-fence:{42}:user:{42}:profile')
      assert.equal(fenceKeyOf('plain'), 'baton-fence:{plain}')
      assert.throws(() => fenceKeyOf('a}b'), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
    })
  })

  describe('HTTP', () => {
    const servers: Server[] = []
    const listen = async (server: Server): Promise<string> => {
      servers.push(server)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    }
    after(async () => { for (const s of servers) await new Promise((r) => s.close(r)) })

    /** The three adapters serve the same little store: PUT /doc writes the body. */
    async function adapters(): Promise<Array<[string, string, () => string]>> {
      const plain = new HttpFence()
      let plainDoc = ''
      const plainUrl = await listen(createServer(plain.handler((req, res) => {
        let body = ''
        req.on('data', (c) => { body += c })
        req.on('end', () => { plainDoc = body; res.end('ok') })
      })))

      const ex = new HttpFence()
      let exDoc = ''
      const app = express()
      app.put('/doc', ex.express(), express.text(), (req, res) => { exDoc = req.body; res.send('ok') })
      const exUrl = await listen(createServer(app))

      const fa = new HttpFence()
      let faDoc = ''
      const fastify = Fastify()
      fastify.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) => done(null, body))
      fastify.put('/doc', { preHandler: fa.fastify() }, async (request) => { faDoc = request.body as string; return 'ok' })
      await fastify.listen({ port: 0, host: '127.0.0.1' })
      servers.push(fastify.server)
      const faUrl = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`
      return [['node:http', plainUrl, () => plainDoc], ['express', exUrl, () => exDoc], ['fastify', faUrl, () => faDoc]]
    }

    it('node:http, express and fastify: 409 for a stale token, 428 without one, 400 for a bad one', async () => {
      const baton = await connect('memory://')
      try {
        const { a, b } = await staleAndFreshHolders(baton, 'docs/readme')
        for (const [adapter, url, doc] of await adapters()) {
          const put = (headers: Record<string, string>, body: string) =>
            fetch(`${url}/doc`, { method: 'PUT', headers: { 'content-type': 'text/plain', ...headers }, body })
          assert.equal((await put(fencingHeaders(b), 'from B')).status, 200, adapter)
          const stale = await put(fencingHeaders(a), 'from A')
          assert.equal(stale.status, 409, adapter)
          const body = await stale.json() as Record<string, string>
          assert.equal(body.code, 'STALE_TOKEN')
          assert.equal(body.highest, b.token.toString())
          assert.equal(body.token, a.token.toString())
          assert.equal(doc(), 'from B', `${adapter}: the stale write did not land`)
          assert.equal((await put({}, 'anonymous')).status, 428, adapter)
          assert.equal((await put({ 'Baton-Lock': 'docs/readme', 'Baton-Fencing-Token': 'x1' }, 'bad')).status, 400, adapter)
          assert.equal(doc(), 'from B', adapter)
        }
        await b.release()
      } finally {
        await baton.close()
      }
    })

    it('a request whose client leaves while it waits for its turn gives the turn back (node:http, express, fastify)', async () => {
      // Token 1's handler waits for `open`; token 2 queues behind it and its client aborts;
      // token 3 must still get in once 1 is done, and 2's handler must never run.
      let open!: () => void
      let gate = Promise.resolve()
      const ran: string[] = []
      const handle = async (token: string): Promise<string> => {
        ran.push(token)
        if (token === '1') await gate
        return `ok ${token}`
      }
      const tokenOf = (req: { headers: Record<string, string | string[] | undefined> }) => String(req.headers['baton-fencing-token'])
      // What each server saw of each token's request: that it arrived, and that its connection closed.
      const seen = new Map<string, { closed: boolean }>()
      const watched = (server: Server): Server => server.on('request', (req, res) => {
        const request = { closed: false }
        seen.set(tokenOf(req), request)
        res.once('close', () => { request.closed = true })
      })
      const plain = new HttpFence()
      const plainServer = watched(createServer(plain.handler((req, res) => { void handle(tokenOf(req)).then((text) => res.end(text)) })))
      const plainUrl = await listen(plainServer)
      const ex = new HttpFence()
      const app = express()
      app.put('/', ex.express(), async (req, res) => { res.send(await handle(tokenOf(req))) })
      const exUrl = await listen(watched(createServer(app)))
      const fa = new HttpFence()
      const fastify = Fastify()
      fastify.put('/', { preHandler: fa.fastify() }, async (request) => handle(tokenOf(request)))
      watched(fastify.server)
      await fastify.listen({ port: 0, host: '127.0.0.1' })
      servers.push(fastify.server)
      const faUrl = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}/`
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
      // Waits on what the servers saw, never on a duration: on a busy machine a
      // server may learn of a request, or of its client leaving, late.
      const until = async (what: string, done: () => boolean) => {
        for (const giveUp = Date.now() + ms(30_000); !done();) {
          if (Date.now() > giveUp) assert.fail(`never happened: ${what}`)
          await pause(5)
        }
      }
      for (const [adapter, url] of [['node:http', plainUrl], ['express', exUrl], ['fastify', faUrl]] as const) {
        ran.length = 0
        seen.clear()
        gate = new Promise<void>((resolve) => { open = resolve })
        const put = (token: string, signal?: AbortSignal) =>
          fetch(url, { method: 'PUT', headers: { 'Baton-Lock': 'r', 'Baton-Fencing-Token': token }, ...(signal ? { signal } : {}) })
        const first = put('1')
        await until(`${adapter}: token 1's handler runs`, () => ran.includes('1'))
        const leaving = new AbortController()
        const second = put('2', leaving.signal).catch(() => 'aborted')
        await until(`${adapter}: token 2 reaches the server`, () => seen.has('2'))
        leaving.abort()
        assert.equal(await second, 'aborted')
        await until(`${adapter}: the server sees token 2's client leave`, () => seen.get('2')!.closed)
        open()
        assert.equal(await (await first).text(), 'ok 1', adapter)
        // Without the fix token 3 waits for ever: give up after a generous bound (a hang, not a duration).
        const third = await Promise.race([put('3'), pause(ms(10_000)).then(() => assert.fail(`${adapter}: token 3 was never admitted`))])
        assert.equal(third.status, 200, adapter)
        assert.equal(await third.text(), 'ok 3', adapter)
        assert.deepEqual(ran, ['1', '3'], `${adapter}: the abandoned request's handler never ran`)
      }
    })

    it('node:http: a handler that throws gives the resource\'s turn back (in a server that survives the throw)', async () => {
      // In a child process: the guard lets the error go on (an unhandled rejection), which a
      // server that logs and carries on survives; node:test would count it against this test.
      const script = join(makeTempDir('fence-throw'), 'server.mjs')
      writeFileSync(script, `
        import { createServer } from 'node:http'
        import { HttpFence } from ${JSON.stringify(new URL('../../src/fencing/index.js', import.meta.url).href)}
        process.on('unhandledRejection', (error) => console.error('handler failed: ' + error.message))
        const fence = new HttpFence()
        const server = createServer(fence.handler((req, res) => {
          if (req.url === '/throw') throw new Error('boom')
          res.end('ok')
        }))
        server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port))
      `)
      const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] })
      try {
        let out = ''
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
        while (!/port \d+/.test(out)) await new Promise((resolve) => setTimeout(resolve, 20))
        const url = `http://127.0.0.1:${/port (\d+)/.exec(out)![1]}`
        const put = (path: string, token: string) => fetch(url + path, { method: 'PUT', headers: { 'Baton-Lock': 'r', 'Baton-Fencing-Token': token } })
        const answered = (path: string, token: string) =>
          Promise.race([put(path, token), new Promise((resolve) => setTimeout(resolve, ms(10_000), `${path} never answered`))])
        const failed = await answered('/throw', '1')
        assert.equal((failed as Response).status, 500, String(failed))
        const next = await answered('/ok', '2')
        assert.equal((next as Response).status, 200, String(next))
      } finally {
        child.kill('SIGKILL')
      }
    })

    it('serialises a resource: a stale request queued behind a slow newer one is refused', async () => {
      const fence = new HttpFence()
      const order: string[] = []
      const url = await listen(createServer(fence.handler((req, res) => {
        const token = req.headers['baton-fencing-token'] as string
        setTimeout(() => { order.push(token); res.end('ok') }, token === '20' ? 100 : 0)
      })))
      const put = (token: string) => fetch(url, { method: 'PUT', headers: { 'Baton-Lock': 'r', 'Baton-Fencing-Token': token } })
      const newer = put('20')
      await new Promise((r) => setTimeout(r, 20))
      const older = put('10')
      assert.equal((await newer).status, 200)
      assert.equal((await older).status, 409)
      assert.deepEqual(order, ['20'])
    })

    it('a lock name any lock may have travels percent-encoded: 報告/daily reaches the guard, and "jobs/a " is not "jobs/a"', async () => {
      const fence = new HttpFence()
      const seen: string[] = []
      const url = await listen(createServer(fence.handler((req, res) => { seen.push(decodeLockHeader(String(req.headers['baton-lock']))); res.end('ok') })))
      const put = (name: string, token: bigint) => fetch(url, { method: 'PUT', headers: fencingHeaders({ name, token }) })
      assert.deepEqual(fencingHeaders({ name: '報告/daily', token: 7n }), { 'Baton-Lock': '%E5%A0%B1%E5%91%8A/daily', 'Baton-Fencing-Token': '7' })
      assert.equal(fencingHeaders({ name: 'jobs/a:b-c_d.e', token: 1n })['Baton-Lock'], 'jobs/a:b-c_d.e', 'a plain name is sent as it is')
      assert.equal((await put('報告/daily', 5n)).status, 200)
      assert.equal((await put('報告/daily', 4n)).status, 409)
      // Header values lose their surrounding spaces: unencoded, these two names would share one fence.
      assert.equal((await put('jobs/a', 9n)).status, 200)
      assert.equal((await put('jobs/a ', 3n)).status, 200, '"jobs/a " has a fence of its own')
      assert.equal((await put('50% off', 2n)).status, 200)
      assert.deepEqual(seen, ['報告/daily', 'jobs/a', 'jobs/a ', '50% off'])
      assert.equal(await fence.fence.read('jobs/a '), 3n)
      assert.equal(await fence.fence.read('jobs/a'), 9n)
      // A header that is not valid percent-encoding: 400, nothing decided.
      const bad = await fetch(url, { method: 'PUT', headers: { 'Baton-Lock': 'jobs/%E5%A0', 'Baton-Fencing-Token': '1' } })
      assert.equal(bad.status, 400)
      assert.match(((await bad.json()) as { message: string }).message, /percent-encoded/)
      assert.throws(() => encodeLockHeader('\uD800x'), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
    })

    it('a lock or token header sent twice is refused with 400, not read as one name', async () => {
      const fence = new HttpFence()
      let ran = 0
      const url = new URL(await listen(createServer(fence.handler((_req, res) => { ran++; res.end('ok') }))))
      const raw = (headers: string[]): Promise<string> => new Promise((resolve, reject) => {
        const socket = netConnect(Number(url.port), '127.0.0.1', () => {
          socket.end(['PUT / HTTP/1.1', 'Host: x', 'Connection: close', 'Content-Length: 0', ...headers, '', ''].join('\r\n'))
        })
        let text = ''
        socket.on('data', (c) => (text += c))
        socket.on('end', () => resolve(text))
        socket.on('error', reject)
      })
      const twoLocks = await raw(['Baton-Lock: a', 'Baton-Lock: b', 'Baton-Fencing-Token: 5'])
      assert.match(twoLocks, /^HTTP\/1\.1 400/)
      assert.match(twoLocks, /baton-lock was sent 2 times/)
      const twoTokens = await raw(['Baton-Lock: a', 'Baton-Fencing-Token: 5', 'Baton-Fencing-Token: 6'])
      assert.match(twoTokens, /^HTTP\/1\.1 400/)
      assert.match(twoTokens, /baton-fencing-token was sent 2 times/)
      assert.equal(ran, 0)
      assert.match(await raw(['Baton-Lock: a', 'Baton-Fencing-Token: 5']), /^HTTP\/1\.1 200/)
    })

    it('a raw UTF-8 lock header (a client from before the encoding) is refused with 400, never read as another name', async () => {
      const fence = new HttpFence()
      let ran = 0
      const url = new URL(await listen(createServer(fence.handler((_req, res) => { ran++; res.end('ok') }))))
      const send = (lock: Buffer, token: string): Promise<string> => new Promise((resolve, reject) => {
        const socket = netConnect(Number(url.port), '127.0.0.1', () => {
          socket.end(Buffer.concat([
            Buffer.from('PUT / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\nBaton-Lock: '),
            lock, Buffer.from(`\r\nBaton-Fencing-Token: ${token}\r\n\r\n`),
          ]))
        })
        let text = ''
        socket.on('data', (c) => (text += c))
        socket.on('end', () => resolve(text))
        socket.on('error', reject)
      })
      // Node reads header bytes as latin1: raw, 報告/daily would be another name, with a fence of its own.
      assert.match(await send(Buffer.from(fencingHeaders({ name: '報告/daily', token: 10n })['Baton-Lock']!), '10'), /^HTTP\/1\.1 200/)
      const stale = await send(Buffer.from('報告/daily', 'utf8'), '5')
      assert.match(stale, /^HTTP\/1\.1 400/)
      assert.match(stale, /visible ASCII/)
      assert.equal(ran, 1)
      assert.equal(await fence.fence.read('報告/daily'), 10n)
    })

    it('keeps at most maxResources names, and a forgotten name\'s stale token is still refused', async () => {
      const fence = new HttpFence({ maxResources: 50 })
      const url = await listen(createServer(fence.handler((_req, res) => res.end('ok'))))
      const put = (name: string, token: bigint) => fetch(url, { method: 'PUT', headers: fencingHeaders({ name, token }) })
      assert.equal((await put('victim', 1000n)).status, 200)
      for (let i = 0; i < 500; i++) assert.equal((await put(`n/${i}`, 2000n + BigInt(i))).status, 200)
      assert.ok(fence.fence.size <= 50, `bounded: ${fence.fence.size} names kept`)
      assert.ok(fence.fence.evictions >= 450)
      const stale = await put('victim', 999n)
      assert.equal(stale.status, 409, 'the forgotten name\'s stale token is refused')
      assert.equal((await put('fresh', 10_000n)).status, 200, 'a token above the floor is let in')
      // The same rule through advanceFence on a bounded MemoryFence.
      const cell = new MemoryFence({ maxResources: 1 })
      await advanceFence(cell, 'a', 10n)
      await advanceFence(cell, 'b', 5n)
      assert.ok((await cell.read('a'))! >= 10n, 'a forgotten name reads as at least its highest')
      await assert.rejects(advanceFence(cell, 'a', 9n), isStale)
      assert.throws(() => new MemoryFence({ maxResources: 0 }), (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT'))
    })
  })
})
