import assert from 'node:assert/strict'
import diagnostics_channel from 'node:diagnostics_channel'
import { describe, it } from 'node:test'
import { inspect } from 'node:util'
import { connect } from '../../src/index.js'
import { ms } from '../harness/timing.js'
import type { SuiteContext } from './context.js'

const CHANNELS = ['baton:acquire', 'baton:release', 'baton:extend', 'baton:lost', 'baton:wait', 'baton:give-up', 'baton:warning', 'baton:redlock-node']

/**
 * No credential in any message, cause, event or inspect output (issue 15,
 * defect 9), whatever the URL's shape. The suite's other tests apply the same
 * check (SuiteContext.assertClean) to the clients and errors they make.
 */
export function credentials(ctx: SuiteContext): void {
  describe('credentials never show', () => {
    it('not in inspect output of the client, its driver and a lease, nor in events', async (t) => {
      const secret = ctx.harness.secret
      if (!secret) return t.skip(`the harness of ${ctx.harness.url.split(':')[0]} connects without a password`)
      const seen: unknown[] = []
      const onEvent = (message: unknown): void => void seen.push(message)
      for (const channel of CHANNELS) diagnostics_channel.subscribe(channel, onEvent)
      try {
        const client = await ctx.client()
        const name = ctx.name('credentials')
        const lease = await client.mutex(name, { ttl: ms(300) }).acquire()
        ctx.assertClean('util.inspect(lease)', inspect(lease, { depth: 12, showHidden: true }))
        ctx.assertClean('util.inspect(driver)', inspect(client.driver, { depth: 12, showHidden: true }))
        ctx.assertClean('inspect(name)', await client.inspect(name))
        await new Promise((resolve) => setTimeout(resolve, ms(600))) // expiry: a lost event with its error
        ctx.assertClean('a lost lease\'s signal reason', lease.signal.reason)
      } finally {
        for (const channel of CHANNELS) diagnostics_channel.unsubscribe(channel, onEvent)
      }
      assert.ok(seen.length > 0)
      for (const event of seen) ctx.assertClean('a diagnostics event', event)
    })

    it('not in the errors of a wrong password, whatever its shape (an unencoded # or @ in it)', async (t) => {
      const secret = ctx.harness.secret
      if (!secret) return t.skip(`the harness of ${ctx.harness.url.split(':')[0]} connects without a password`)
      for (const wrong of [`${secret}-wrong`, `wr#ng-${secret}`, `wr@ng/${secret}`]) {
        const url = ctx.harness.url.replace(secret, wrong)
        assert.notEqual(url, ctx.harness.url)
        const error = await connect(url, { connectTimeout: ms(3000) }).then(
          async (client) => {
            // Some stores only refuse at the first command.
            try {
              return await client.mutex(ctx.name('credentials-wrong')).tryAcquire().then(() => undefined, (e: unknown) => e)
            } finally {
              await client.close()
            }
          },
          (e: unknown) => e,
        )
        assert.ok(error instanceof Error, `a wrong password is refused (${wrong.replace(secret, '<secret>')})`)
        ctx.assertClean('a refused password\'s error', error)
        for (const text of [inspect(error, { depth: 12, showHidden: true }), error.message]) {
          assert.ok(!text.includes(wrong) && !text.includes(encodeURIComponent(wrong)), `the wrong password shows:\n${text.slice(0, 2000)}`)
        }
      }
    })
  })
}
