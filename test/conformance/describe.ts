import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { describe, it } from 'node:test'
import { connect, type Baton } from '../../src/index.js'
import { nextEvent, type SuiteContext } from './context.js'
import type { WaitEvent } from '../../src/core/events.js'

/** Generous: `since` is by the store's clock, which may differ from ours a little. */
const CLOCK_SLACK_MS = 60_000

/**
 * "Who holds it": every store keeps the description the core sends with an
 * acquire (host, pid, client name) beside the hold and the line entry, and
 * gives it back in inspect and list with when it granted or queued it.
 */
export function describing(ctx: SuiteContext): void {
  describe('who holds it (description and since)', () => {
    it('inspect and list show the description and since of a holder and of a waiter', async () => {
      const clients: Baton[] = []
      try {
        const holderClient = await connect(ctx.harness.url, { clientName: 'conformance holder' })
        clients.push(holderClient)
        const waiterClient = await connect(ctx.harness.url, { clientName: 'conformance waiter' })
        clients.push(waiterClient)
        const reader = await ctx.client()
        const name = ctx.name('describe')
        const started = Date.now()
        const lease = await holderClient.mutex(name).acquire()
        const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
        const waiting = waiterClient.mutex(name).acquire()
        // Closed in `finally` if an assertion fails first: that CLOSED must not hide the assertion.
        waiting.catch(() => {})
        await queued

        const view = await reader.inspect(name)
        assert.ok(view, 'the lock is held')
        const [holder] = view.holders
        const [waiter] = view.waiters
        assert.ok(holder && waiter, `one holder and one waiter: ${JSON.stringify(view, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`)
        for (const [entry, client] of [[holder, 'conformance holder'], [waiter, 'conformance waiter']] as const) {
          assert.ok(entry.description, `${client}: a description`)
          assert.deepEqual(JSON.parse(entry.description), { host: hostname(), pid: process.pid, client })
          assert.equal(typeof entry.since, 'number', `${client}: since`)
          assert.ok(entry.since! >= started - CLOCK_SLACK_MS && entry.since! <= Date.now() + CLOCK_SLACK_MS, `${client}: since ${entry.since} near now`)
        }
        assert.ok(holder.since! <= holder.expiresAt, 'granted before it expires')

        const [listed] = await reader.list({ prefix: name })
        assert.equal(listed?.holders[0]?.description, holder.description)
        assert.equal(listed?.waiters[0]?.description, waiter.description)

        await lease.release()
        const next = await waiting
        const after = await reader.inspect(name)
        assert.equal(after?.holders[0]?.description, waiter.description, 'the waiter, handed the lock, is described as itself')
        await next.release()
      } finally {
        await Promise.all(clients.map((c) => c.close().catch(() => {})))
      }
    })
  })
}
