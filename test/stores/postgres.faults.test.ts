/**
 * PostgreSQL-only failure behaviour (why not in the conformance suite: these
 * are about one store's server restarting, its connections dropping, its
 * users' rights, and its tables' size).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError, type Baton, type Lease } from '../../src/index.js'
import { aborted, nextEvent, sleep, SuiteContext, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { freePort } from '../harness/ports.js'
import { startPostgres, type PostgresServer } from '../harness/postgres.js'
import { sqlFor } from '../../src/drivers/postgres/sql.js'
import { ms } from '../harness/timing.js'

let server: PostgresServer
const ctx = new SuiteContext()

before(async () => {
  // fsync on: the restart below is a crash, and the leases must come back from disk.
  server = await startPostgres({ fsync: true })
  ctx.harness = { url: server.url, crossProcess: true, close: async () => {} }
})
after(async () => {
  await ctx.cleanup()
  await server.stop()
})

/** Rows baton keeps in a schema, all tables together. */
async function rowsIn(schema: string): Promise<number> {
  const [row] = await server.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM ${schema}.names) + (SELECT count(*) FROM ${schema}.holds) + (SELECT count(*) FROM ${schema}.line) AS n`,
  )
  return Number(row!.n)
}

/**
 * Acquires `name` until it has it, riding out an unreachable store the
 * documented way: a retryable error means "try again".
 */
async function acquireThroughOutage(client: Baton, name: string, ttl: number): Promise<Lease> {
  for (;;) {
    try {
      return await client.mutex(name, { ttl }).acquire({ wait: ms(30_000), autoExtend: true })
    } catch (error) {
      if (!isBatonError(error) || !error.retryable) throw error
      await sleep(ms(100))
    }
  }
}

/** Records who holds each name, and fails on a grant while another lease on the name is still held. */
class HolderLog {
  readonly violations: string[] = []
  private readonly current = new Map<string, Lease>()
  granted(lease: Lease): void {
    const other = this.current.get(lease.name)
    if (other && other.held) this.violations.push(`${lease.owner} granted "${lease.name}" while ${other.owner} held it`)
    this.current.set(lease.name, lease)
  }
}

describe('postgres faults', () => {
  it('a holder process killed with kill -9: the waiter gets the name after its ttl, with a larger token', async () => {
    const name = 'faults/killed-holder'
    const holder = ctx.worker({ task: 'hold', name, ttl: ms(800) })
    const heldToken = BigInt((await holder.line('held')).split(' ')[1]!)
    const client = await ctx.client()
    const waiting = client.mutex(name).acquire({ wait: ms(10_000) })
    await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    holder.kill9()
    await holder.exited
    const lease = await waiting
    assert.ok(lease.token > heldToken, `${lease.token} must exceed ${heldToken}`)
    await lease.release()
    await ctx.cleanup()
  })

  it('a restart under held leases and waiters: one holder at a time, tokens increase, waiters served, short leases lost', async () => {
    const [a, b, c, d] = [await ctx.client(), await ctx.client(), await ctx.client(), await ctx.client()]
    const log = new HolderLog()
    const long = 'faults/restart/long-lease' // outlives the outage: kept
    const short = 'faults/restart/short-lease' // shorter than the outage: lost
    const longHold = await acquireThroughOutage(a, long, ms(8000))
    const shortHold = await acquireThroughOutage(c, short, ms(700))
    log.granted(longHold)
    log.granted(shortHold)
    const waiters = [
      acquireThroughOutage(b, long, ms(8000)).then((lease) => (log.granted(lease), lease)),
      acquireThroughOutage(d, short, ms(8000)).then((lease) => (log.granted(lease), lease)),
    ]
    await sleep(ms(100))

    await server.restart(ms(2000))

    const reason = await aborted(shortHold.signal, ms(10_000))
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
    // The store let the short lease go by its own clock; its waiter takes over.
    const shortNext = await withTimeout(waiters[1]!, ms(20_000), 'the short lease\'s waiter')
    assert.ok(shortNext.token > shortHold.token, `${shortNext.token} must exceed ${shortHold.token}`)
    // The long lease is renewed again once the server is back, and still held.
    await longHold.extend()
    assert.equal(longHold.signal.aborted, false)
    await longHold.release()
    const longNext = await withTimeout(waiters[0]!, ms(20_000), 'the long lease\'s waiter')
    assert.ok(longNext.token > longHold.token, `${longNext.token} must exceed ${longHold.token}`)
    assert.deepEqual(log.violations, [])
    await Promise.all([shortNext.release(), longNext.release()])
    await ctx.cleanup()
  })

  it('the wake-up connection drops: it reconnects and waiters are still served', async () => {
    const [a, b] = [await ctx.client(), await ctx.client()]
    const name = 'faults/listener-dropped'
    const holder = await a.mutex(name, { ttl: '30s' }).acquire()
    const waiting = b.mutex(name, { ttl: '30s' }).acquire({ wait: ms(15_000) })
    await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    const killed = await server.query<{ ok: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`,
    )
    assert.ok(killed.length >= 2, 'both clients had a LISTEN connection')
    await sleep(ms(300))
    await holder.release()
    const lease = await waiting
    assert.ok(lease.token > holder.token)
    await lease.release()
    await ctx.cleanup()
  })

  it('bad URLs are refused with INVALID_ARGUMENT before any connection', async () => {
    const base = `postgres://u:secret@127.0.0.1:${server.port}`
    const cases = [
      [`postgres://127.0.0.1:1,127.0.0.1:2/db`, /one/],
      [`${base}/db?sslmode=prefer`, /sslmode/],
      [`${base}/db?sslmode=sometimes`, /sslmode/],
      [`${base}/db?schema=Bad-Name`, /schema/],
      [`${base}/db?poolSize=0`, /poolSize/],
      [`${base}/db?colour=blue`, /colour/],
      [`${base}/db/extra`, /database/],
      [`${base}/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem`, /sslrootcert/],
      [`${base}/db?fenceTtl=soon`, /fenceTtl/],
    ] as const
    for (const [url, pattern] of cases) {
      const error = await connect(url).catch((e: unknown) => e)
      assert.ok(isBatonError(error, 'INVALID_ARGUMENT'), `${url}: ${String(error)}`)
      assert.match(error.message, pattern)
      assert.doesNotMatch(error.message, /secret/, 'no password in messages')
    }
  })

  it('an unreachable server, a wrong password and a missing database give typed errors, promptly', async () => {
    const port = await freePort()
    const bound = ms(15_000)
    const unreachable = await withTimeout(connect(`postgres://u:secret@127.0.0.1:${port}/db`, { connectTimeout: ms(1000) }).catch((e: unknown) => e), bound, 'unreachable')
    assert.ok(isBatonError(unreachable, 'BACKEND_UNAVAILABLE'), String(unreachable))
    assert.equal(unreachable.retryable, true)
    assert.match(unreachable.message, /127\.0\.0\.1/)

    const wrong = await withTimeout(connect(server.urlFor({ password: 'wrong-secret' })).catch((e: unknown) => e), bound, 'wrong password')
    assert.ok(isBatonError(wrong, 'UNAUTHORIZED'), String(wrong))
    assert.match(wrong.message, /password/)
    assert.doesNotMatch(wrong.message, /wrong-secret/, 'no password in messages')

    const missing = await withTimeout(connect(server.urlFor({ database: 'no_such_db' })).catch((e: unknown) => e), bound, 'missing database')
    assert.ok(isBatonError(missing, 'INVALID_ARGUMENT'), String(missing))
    assert.match(missing.message, /no_such_db/)
    assert.doesNotMatch(missing.message, new RegExp(server.password), 'no password in messages')

    // A server that accepts connections but does not answer (frozen).
    server.pause()
    try {
      const frozen = await withTimeout(connect(server.url, { connectTimeout: ms(1000) }).catch((e: unknown) => e), bound, 'frozen server')
      assert.ok(isBatonError(frozen, 'BACKEND_UNAVAILABLE'), String(frozen))
    } finally {
      server.resume()
    }
  })

  it('2,000 names locked and released once leave fewer than 200 rows five seconds later; tokens still increase', async () => {
    const schema = 'bounded'
    const client = await connect(server.urlFor({ query: `schema=${schema}&fenceTtl=1s` }))
    try {
      const names = Array.from({ length: 2000 }, (_, i) => `bounded/${i}`)
      const firstTokens = new Map<string, bigint>()
      const queue = [...names]
      await Promise.all(Array.from({ length: 16 }, async () => {
        for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
          const lease = await client.mutex(name).acquire()
          firstTokens.set(name, lease.token)
          await lease.release()
        }
      }))
      await sleep(5000)
      const left = await rowsIn(schema)
      assert.ok(left < 200, `${left} rows left`)
      const again = await client.mutex(names[0]!).acquire()
      assert.ok(again.token > firstTokens.get(names[0]!)!, 'a name whose counter was dropped still gets a larger token')
      await again.release()
    } finally {
      await client.close()
    }
  })

  it('a user without the right to create the schema gets INVALID_ARGUMENT naming the statement to run', async () => {
    await server.query(`CREATE ROLE limited LOGIN PASSWORD 'limited-pw'`)
    const url = server.urlFor({ user: 'limited', password: 'limited-pw', query: 'schema=limited_locks' })
    const error = await connect(url).catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'INVALID_ARGUMENT'), String(error))
    assert.match(error.message, /CREATE SCHEMA "limited_locks" AUTHORIZATION "limited";/)
    assert.doesNotMatch(error.message, /limited-pw/)
    assert.deepEqual(await server.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'limited_locks'`), [], 'nothing was created')

    // Doing what the message says is enough.
    await server.query('CREATE SCHEMA "limited_locks" AUTHORIZATION "limited"')
    const client = await connect(url)
    const lease = await client.mutex('limited/works').acquire()
    await lease.release()
    await client.close()
  })

  it('clients creating the schema at once apply it exactly once', async () => {
    const url = server.urlFor({ query: 'schema=racing' })
    const clients = await Promise.all(Array.from({ length: 6 }, () => connect(url)))
    try {
      const versions = await server.query<{ version: number }>('SELECT version FROM racing.migrations')
      // Every migration the client ships, each applied once.
      assert.deepEqual(versions.map((v) => v.version).sort((a, b) => a - b), sqlFor('racing').migrations.map((m) => m.version))
      const lease = await clients[0]!.mutex('racing/one').acquire()
      assert.equal(await clients[5]!.mutex('racing/one').tryAcquire(), null)
      await lease.release()
    } finally {
      await Promise.all(clients.map((c) => c.close()))
    }
  })
})

describe('postgres: who holds and who waits (schema version 2)', () => {
  it('keeps each hold\'s and line entry\'s description and since, also across a hand-over, and bounds it', async () => {
    const client = await connect(server.url)
    try {
      const name = `described/${process.pid}`
      const spec = { name, kind: 'mutex', mode: 'exclusive', fair: true, permits: 1, lockDelayMs: 0 } as const
      const first = { ...spec, owner: `${client.keeper.clientId}.first`, ttlMs: 30_000, enqueue: true, queueTtlMs: 30_000, retry: false, description: '{"who":"first"}' }
      const second = { ...first, owner: `${client.keeper.clientId}.second`, description: `{"who":"second","pad":"${'x'.repeat(400)}"}` }
      const before = Date.now()
      assert.equal((await client.driver.acquire(first)).status, 'granted')
      assert.equal((await client.driver.acquire(second)).status, 'busy')
      let info = await client.driver.inspect(name)
      assert.equal(info?.holders[0]?.description, '{"who":"first"}')
      assert.ok(info!.holders[0]!.since! >= before - 1000 && info!.holders[0]!.since! <= Date.now() + 1000)
      assert.equal(info?.waiters[0]?.description?.length, 256, 'cut to MAX_DESCRIPTION_BYTES')
      assert.ok(info!.waiters[0]!.since! >= before - 1000)
      const granted = await client.driver.acquire({ ...first, owner: `${client.keeper.clientId}.third`, description: '{"who":"third"}', enqueue: false })
      assert.equal(granted.status, 'busy')
      const [held] = info!.holders
      assert.equal(await client.driver.release({ ...spec, owner: first.owner, token: held!.token }), true)
      info = await client.driver.inspect(name)
      assert.equal(info?.holders[0]?.owner, second.owner)
      assert.match(info?.holders[0]?.description ?? '', /^\{"who":"second"/, 'the waiter\'s own description, not the releaser\'s')
      await client.driver.release({ ...spec, owner: second.owner, token: info!.holders[0]!.token })
    } finally {
      await client.close()
    }
  })
})
