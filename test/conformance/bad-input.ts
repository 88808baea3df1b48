import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect, isBatonError } from '../../src/index.js'
import type { SuiteContext } from './context.js'
import { urlOptionsOf } from '../../src/drivers/registry.js'

const invalid = (e: unknown): boolean => isBatonError(e, 'INVALID_ARGUMENT') && e.retryable === false && e.message.length > 20

export function badInput(ctx: SuiteContext): void {
  describe('bad input', () => {
    it('bad lock names get INVALID_ARGUMENT and leave the store untouched', async () => {
      const client = await ctx.client()
      const before = await client.list({ prefix: 'conformance/bad' })
      const names: unknown[] = ['', 'x'.repeat(257), 'a\u0000b', 'line\nbreak', 'tab\there', 'del\u007f', 'brace{x}', 42, null, undefined, {}]
      for (const name of names) {
        assert.throws(() => client.mutex(name as string), invalid, `name ${JSON.stringify(name)}`)
      }
      await assert.rejects(client.inspect(''), invalid)
      await assert.rejects(client.forceRelease('a\u0001'), invalid)
      await assert.rejects(client.list({ prefix: 'p\u0000' }), invalid)
      assert.deepEqual(await client.list({ prefix: 'conformance/bad' }), before)
      // Unicode and 256-byte names are fine.
      const lease = await client.mutex(`conformance/bad/ünïcødé/${'é'.repeat(100)}`).acquire()
      await lease.release()
    })

    it('bad durations get INVALID_ARGUMENT naming the setting', async () => {
      const client = await ctx.client()
      const name = ctx.name('bad-durations')
      for (const ttl of [0, -1, NaN, Infinity, 'abc', '10 parsecs', '-5s', '', 5, 2 ** 40, true, {}]) {
        assert.throws(() => client.mutex(name, { ttl: ttl as number }), (e) => invalid(e) && /ttl/.test((e as Error).message), `ttl ${String(ttl)}`)
      }
      const lock = client.mutex(name)
      for (const wait of [-1, NaN, 'soon', '1 minute', null]) {
        await assert.rejects(lock.acquire({ wait: wait as number }), (e) => invalid(e) && /wait/.test((e as Error).message), `wait ${String(wait)}`)
      }
      assert.throws(() => client.mutex(name, { lockDelay: -3 }), invalid)
      await assert.rejects(lock.acquire({ signal: 'stop' as unknown as AbortSignal }), invalid)
      await assert.rejects(lock.acquire({ wiat: '1s' } as never), (e) => invalid(e) && /wiat/.test((e as Error).message))
      assert.throws(() => client.mutex(name, 'fast' as never), invalid)
      assert.throws(() => client.mutex(name, { ttl: '1s', fair: 'yes' as never }), invalid)
      assert.equal(await client.inspect(name), null, 'nothing reached the store')
      // Valid spellings work.
      for (const ttl of ['250ms', '1.5s', '2m', '1h', 1000]) client.mutex(name, { ttl })
    })

    it('lease.extend(ttl) parses durations like ttl and refuses bad ones, leaving the hold untouched', async () => {
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('bad-extend')
      const lease = await a.mutex(name, { ttl: '10s' }).acquire()
      await lease.extend('1m')
      assert.ok(lease.remainingMs() > 50_000, `extend('1m') gives about a minute, got ${lease.remainingMs()} ms`)
      const stored = (await a.inspect(name))?.holders[0]?.expiresAt
      for (const ttl of [0, -1, -5000, 1e15, NaN, Infinity, 'junk', '-1s', '', 5, null, {}]) {
        await assert.rejects(lease.extend(ttl as number), (e) => invalid(e) && /ttl/.test((e as Error).message), `extend(${String(ttl)})`)
      }
      assert.equal(lease.held, true)
      assert.ok(lease.remainingMs() > 50_000)
      const view = await a.inspect(name)
      assert.deepEqual(view?.holders.map((h) => h.owner), [lease.owner], 'the hold is still there')
      assert.ok(Math.abs(view!.holders[0]!.expiresAt - stored!) < 5000, 'and its expiry did not move')
      assert.equal(await b.mutex(name).tryAcquire(), null, 'nobody else got it')
      await lease.release()
    })

    it('bad store URLs get INVALID_ARGUMENT', async () => {
      for (const url of ['nope://x', 'redis//missing-colon', 'http:/x', 'redis://h:99999', 'redis://a:1,b:2', 42, 'redis://host:6379/notadb', 'redis://h:6379?prefix=bad prefix']) {
        await assert.rejects(connect(url as string), invalid, `url ${String(url)}`)
      }
      await assert.rejects(connect('memory://', { connectTimeout: 'forever' } as never), invalid)
      await assert.rejects(connect('memory://', { colour: 'blue' } as never), invalid)
    })

    it('unknown and misspelled store URL options get INVALID_ARGUMENT naming them and the options the store knows', async () => {
      const url = ctx.harness.url
      const scheme = url.slice(0, url.indexOf('://'))
      const known = urlOptionsOf(scheme)
      const withOption = (option: string) => `${url}${url.includes('?') ? '&' : '?'}${option}`
      const refusal = async (option: string) => {
        const error = await connect(withOption(option)).then(async (client) => {
          await client.close() // taken where it should have been refused: leave nothing open
          return client
        }, (e: unknown) => e)
        assert.ok(invalid(error), `${option}: ${String(error)}`)
        ctx.assertClean('the refusal', error)
        return (error as Error).message
      }
      for (const option of ['bogus=1', 'x=1', 'fencettl=2s', 'FENCETTL=1h', 'prefix%20=a']) {
        const message = await refusal(option)
        const name = decodeURIComponent(option.slice(0, option.indexOf('=')))
        assert.ok(message.includes(`"${name}"`), `the message names "${name}": ${message}`)
        for (const one of known) assert.ok(message.includes(one), `the message lists "${one}" (known to ${scheme}://): ${message}`)
      }
      // A near miss of each option this store knows is named with the right spelling.
      for (const one of known) {
        const typo = one.length > 3 ? one.slice(0, -2) + one.slice(-1) : `${one}s`
        assert.match(await refusal(`${typo}=1`), new RegExp(`did you mean "${one}"`), `${typo} for ${one}`)
        if (one.toLowerCase() !== one) assert.match(await refusal(`${one.toLowerCase()}=1`), new RegExp(`did you mean "${one}"`))
      }
      assert.match(await refusal('bogus=1&bogus=2'), /bogus/)
      // A known option is still taken.
      if (known.includes('fenceTtl')) await (await connect(withOption('fenceTtl=2h'))).close()
    })

    it('a name used as another kind, or with another permit count, is refused while in use', async (t) => {
      const refused = await ctx.refuses('semaphore')
      if (refused) return t.skip(refused)
      const client = await ctx.client()
      const name = ctx.name('bad-kind')
      const lease = await client.mutex(name).acquire()
      await assert.rejects(client.semaphore(name, { permits: 2 }).acquire({ wait: 0 }), (e) => invalid(e) && /mutex/.test((e as Error).message))
      await assert.rejects(client.rwlock(name).read().tryAcquire(), invalid)
      await lease.release()
      const permit = await client.semaphore(name, { permits: 2 }).acquire()
      await assert.rejects(client.semaphore(name, { permits: 3 }).tryAcquire(), (e) => invalid(e) && /2 permits/.test((e as Error).message))
      for (const permits of [0, -1, 1.5, NaN, '2', undefined]) {
        assert.throws(() => client.semaphore(name, { permits: permits as number }), invalid, `permits ${String(permits)}`)
      }
      const view = await client.inspect(name)
      assert.equal(view?.kind, 'semaphore')
      assert.equal(view?.holders.length, 1)
      await permit.release()
    })
  })
}
