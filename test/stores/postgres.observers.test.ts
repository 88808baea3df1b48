/**
 * PostgreSQL election observers coming and going: the one LISTEN connection
 * of a client gets LISTEN / UNLISTEN whenever they do. Its own file because
 * pg's deprecation warning for a query sent while another runs on the same
 * client (refused outright by pg 9) is emitted once per process.
 */
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { startPostgres, type PostgresServer } from '../harness/postgres.js'
import { SuiteContext, withTimeout } from '../conformance/context.js'
import { ms } from '../harness/timing.js'

let server: PostgresServer
const ctx = new SuiteContext()
const warnings: Error[] = []
const onWarning = (warning: Error) => warnings.push(warning)

before(async () => {
  server = await startPostgres()
  ctx.harness = { url: server.url, crossProcess: true, close: async () => {} }
  process.on('warning', onWarning)
})
after(async () => {
  process.off('warning', onWarning)
  await ctx.cleanup()
  await server.stop()
})

it('observers that come and go send their LISTEN / UNLISTEN one at a time (no pg warning)', async () => {
  const baton = await ctx.client()
  for (let round = 0; round < 5; round++) {
    // Observers made and dropped in one go: each first and last one LISTENs / UNLISTENs.
    for (let i = 0; i < 5; i++) {
      const stop = new AbortController()
      baton.election(`observers/${i % 3}`).observe({ signal: stop.signal })[Symbol.asyncIterator]()
      stop.abort()
    }
    const stop = new AbortController()
    const changes = baton.election('observers/round').observe({ signal: stop.signal })[Symbol.asyncIterator]()
    await withTimeout(changes.next(), ms(10_000), 'the first leader read')
    stop.abort()
  }
  // A last observer: its LISTEN went out behind every UNLISTEN before it, and still reports.
  const stop = new AbortController()
  const changes = baton.election('observers/last').observe({ signal: stop.signal })[Symbol.asyncIterator]()
  assert.equal((await withTimeout(changes.next(), ms(10_000), 'the first leader read')).value, null)
  const lease = await baton.election('observers/last', { ttl: '10s' }).campaign({ value: 'v' })
  assert.deepEqual((await withTimeout(changes.next(), ms(10_000), 'the leader')).value, { value: 'v', token: lease.token })
  await lease.resign()
  stop.abort()
  const pgWarnings = warnings.filter((w) => /client\.query\(\)|pg@9/.test(w.message))
  assert.deepEqual(pgWarnings.map((w) => w.message), [], 'pg warned about overlapping queries')
})
