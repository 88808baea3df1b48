/**
 * MySQL-only failure behaviour: the client's connections killed by the
 * server (`KILL <id>`, what an administrator or a proxy's idle cull does),
 * and the typed errors of connecting. Why not in the conformance suite: KILL
 * is this server's own tool; the suite's resets go through the proxy.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError } from '../../src/index.js'
import { nextEvent, sleep, SuiteContext, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { freePort } from '../harness/ports.js'
import { startMariadb, type MariadbServer } from '../harness/mariadb.js'
import { ms } from '../harness/timing.js'

let server: MariadbServer
const ctx = new SuiteContext()

before(async () => {
  server = await startMariadb()
  ctx.harness = { url: server.url, crossProcess: true, close: async () => {} }
})
after(async () => {
  await ctx.cleanup()
  await server.stop()
})

/** KILLs every connection of user baton: pools, pollers and doorbells alike. */
async function killClientConnections(): Promise<number> {
  const rows = await server.query<{ ID: number }>(`SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'baton'`)
  for (const row of rows) await server.query(`KILL ${Number(row.ID)}`).catch(() => {})
  return rows.length
}

describe('mysql faults', () => {
  it('every connection of both clients killed (KILL <id>) while one holds and one waits: the holder renews, the waiter is served', async () => {
    const [a, b] = [await ctx.client(), await ctx.client()]
    const name = 'faults/killed-connections'
    const holder = await a.mutex(name, { ttl: '30s' }).acquire()
    const waiting = b.mutex(name, { ttl: '30s' }).acquire({ wait: ms(15_000) })
    await nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    assert.ok((await killClientConnections()) >= 4, 'pool, poller and doorbell connections were there to kill')
    await sleep(ms(300))
    // A call that met a killed pooled connection fails retryable; the documented answer is to try again.
    await holder.extend().catch(async (error: unknown) => {
      if (!isBatonError(error) || !error.retryable) throw error
      await holder.extend()
    })
    assert.equal(holder.signal.aborted, false)
    await holder.release()
    const lease = await withTimeout(waiting, ms(15_000), 'the waiter')
    assert.ok(lease.token > holder.token)
    await lease.release()
    await ctx.cleanup()
  })

  it('an unreachable server, a wrong password and a missing database give typed errors, without the password', async () => {
    const port = await freePort()
    const unreachable = await connect(`mysql://u:secret@127.0.0.1:${port}/db`, { connectTimeout: ms(1000) }).catch((e: unknown) => e)
    assert.ok(isBatonError(unreachable, 'BACKEND_UNAVAILABLE'), String(unreachable))
    const wrong = await connect(server.url.replace(server.password, 'wrong-secret')).catch((e: unknown) => e)
    assert.ok(isBatonError(wrong, 'UNAUTHORIZED'), String(wrong))
    assert.doesNotMatch(wrong.message, /wrong-secret/)
    const missing = await connect(server.url.replace(/\/baton$/, '/no_such_db')).catch((e: unknown) => e)
    // The user has rights on its own database only: MariaDB answers "access denied" for another.
    assert.ok(isBatonError(missing, 'INVALID_ARGUMENT') || isBatonError(missing, 'UNAUTHORIZED'), String(missing))
    assert.match(missing.message, /no_such_db/)
    assert.doesNotMatch(missing.message, new RegExp(server.password))
  })
})
