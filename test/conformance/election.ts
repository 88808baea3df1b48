import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect, isBatonError, type Baton, type LeaderChange } from '../../src/index.js'
import { aborted, sleep, withTimeout, type SuiteContext } from './context.js'
import { ms } from '../harness/timing.js'

/** Pulls changes from election.observe() one at a time. */
function follow(baton: Baton, name: string, signal: AbortSignal): { next: () => Promise<LeaderChange> } {
  const iterator = baton.election(name).observe({ signal })[Symbol.asyncIterator]()
  return {
    next: async () => {
      const step = await withTimeout(iterator.next(), ms(15_000), `the next leader change of ${name}`)
      assert.equal(step.done, false, 'observe() ended early')
      return step.value as LeaderChange
    },
  }
}

/** Resolves once `name`'s line holds `count` waiters (so campaign order is known). */
async function waitersOf(baton: Baton, name: string, count: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (((await baton.inspect(name))?.waiters.length ?? 0) >= count) return
    await sleep(25)
  }
  throw new Error(`${name} never had ${count} waiters`)
}

/**
 * Leader election (baton.election): one leader at a time, elected in campaign
 * order, terms ordered by token, values beside the hold, changes followed
 * without polling. A store that can not keep it refuses it with a reason.
 */
export function election(ctx: SuiteContext): void {
  const refused = () => ctx.refusesElections()

  describe('leader election', () => {
    it('one leader at a time; resign hands over at once, in campaign order, with a greater token', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, b, c] = [await ctx.client(), await ctx.client(), await ctx.client()]
      const name = ctx.name('election-order')
      // A long ttl: a hand-over that waited for the lease to end would miss the 10 s bound.
      const ttl = '60s'
      const first = await a.election(name, { ttl }).campaign({ value: 'a' })
      const second = b.election(name, { ttl }).campaign({ value: 'b', wait: '20s' })
      await waitersOf(a, name, 1)
      const third = c.election(name, { ttl }).campaign({ value: 'c', wait: '20s' })
      await waitersOf(a, name, 2)
      assert.deepEqual(pick(await a.election(name).leader()), { value: 'a', token: first.token })

      await first.resign()
      assert.equal(first.held, false)
      const secondTerm = await withTimeout(second, ms(10_000), 'the second candidate after a resign')
      assert.ok(secondTerm.token > first.token, 'a later term has a greater token')
      assert.equal((await a.inspect(name))?.holders.length, 1, 'one leader at a time')
      assert.deepEqual(pick(await c.election(name).leader()), { value: 'b', token: secondTerm.token })

      await secondTerm.release()
      const thirdTerm = await withTimeout(third, ms(10_000), 'the third candidate after a resign')
      assert.ok(thirdTerm.token > secondTerm.token)
      await thirdTerm[Symbol.asyncDispose]()
      assert.equal(await a.election(name).leader(), null)
    })

    it('proclaim changes the value leader() and observe() show, keeping the term', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, b] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('election-proclaim')
      const stop = new AbortController()
      const feed = follow(b, name, stop.signal)
      assert.equal(await feed.next(), null, 'observe() starts with the current leader: none')

      const leadership = await a.election(name, { ttl: '10s' }).campaign({ value: 'host-a:8080' })
      assert.deepEqual(await feed.next(), { value: 'host-a:8080', token: leadership.token })
      await leadership.proclaim('host-a:9090')
      assert.equal(leadership.value, 'host-a:9090')
      assert.deepEqual(await feed.next(), { value: 'host-a:9090', token: leadership.token }, 'the same term, a new value')
      assert.deepEqual(pick(await b.election(name).leader()), { value: 'host-a:9090', token: leadership.token })
      const leader = await b.election(name).leader()
      assert.equal(typeof leader?.holder, 'string')

      // A second observer starts with the leader as it is now.
      const late = follow(b, name, stop.signal)
      assert.deepEqual(await late.next(), { value: 'host-a:9090', token: leadership.token })
      await leadership.resign()
      assert.equal(await feed.next(), null)
      assert.equal(await late.next(), null)
      stop.abort()
    })

    it('observe() follows a plain mutex\'s holder as the leader (a hold with no value): taken, handed over, released', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, b, watcher] = [await ctx.client(), await ctx.client(), await ctx.client()]
      const name = ctx.name('election-observe-mutex')
      const stop = new AbortController()
      const feed = follow(watcher, name, stop.signal)
      assert.equal(await feed.next(), null)
      const first = await a.mutex(name, { ttl: '30s', fair: true }).acquire()
      assert.equal((await feed.next())?.token, first.token, 'the plain holder is reported')
      const waiting = b.mutex(name, { ttl: '30s', fair: true }).acquire({ wait: '30s' })
      await waitersOf(a, name, 1)
      await first.release()
      const second = await waiting
      assert.equal((await feed.next())?.token, second.token, 'the hand-over is reported')
      await second.release()
      assert.equal(await feed.next(), null, 'the release is reported')
      stop.abort()
    })

    it('observe reports a plain-mutex leader', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, watcher] = [await ctx.client(), await ctx.client()]
      const name = ctx.name('election-plain')
      const stop = new AbortController()
      const feed = follow(watcher, name, stop.signal)
      assert.equal(await feed.next(), null)
      // A plain mutex on the name is a candidate without a value (docs/election.md).
      const lease = await a.mutex(name, { ttl: '10s' }).acquire()
      assert.deepEqual(await feed.next(), { value: '', token: lease.token }, 'a plain-mutex leader is reported')
      await lease.release()
      assert.equal(await feed.next(), null, 'its release too')
      stop.abort()
    })

    it('any value is kept as given, even one shaped like a store\'s own entry', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, b] = [await ctx.client(), await ctx.client()]
      // The shapes of baton's own line entries (etcd, ZooKeeper), weighted ones too, and a note after them.
      for (const [i, value] of ['sp2*2|x', 'mx1f|y', 'rw1|z\n{"v":"w"}'].entries()) {
        const name = ctx.name(`election-shaped-${i}`)
        const leadership = await a.election(name, { ttl: '10s' }).campaign({ value })
        assert.deepEqual(pick(await b.election(name).leader()), { value, token: leadership.token }, `another client reads ${JSON.stringify(value)} as the leader's value`)
        // Another candidate waits behind it as behind any leader (not refused, not let in).
        await assert.rejects(b.election(name, { ttl: '10s' }).campaign({ value: 'next', wait: ms(300) }), (e: unknown) => isBatonError(e, 'LOCK_TIMEOUT'))
        await leadership.proclaim(`${value}+`)
        assert.deepEqual(pick(await b.election(name).leader()), { value: `${value}+`, token: leadership.token })
        await leadership.resign()
      }
    })

    it('observe() sees every change in order, terms never going back', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const [a, b, watcher] = [await ctx.client(), await ctx.client(), await ctx.client()]
      const name = ctx.name('election-observe')
      const stop = new AbortController()
      const feed = follow(watcher, name, stop.signal)
      assert.equal(await feed.next(), null)
      const seen: LeaderChange[] = []
      for (let round = 0; round < 3; round++) {
        const term = await (round % 2 === 0 ? a : b).election(name, { ttl: '10s' }).campaign({ value: `v${round}` })
        seen.push(await feed.next())
        await term.proclaim(`v${round}+`)
        seen.push(await feed.next())
        await term.resign()
        seen.push(await feed.next())
      }
      const terms = seen.filter((change): change is NonNullable<LeaderChange> => change !== null)
      assert.deepEqual(terms.map((change) => change.value), ['v0', 'v0+', 'v1', 'v1+', 'v2', 'v2+'])
      for (let i = 2; i < terms.length; i += 2) assert.ok(terms[i]!.token > terms[i - 1]!.token, 'tokens increase across terms')
      assert.equal(seen.filter((change) => change === null).length, 3)
      // Ending the signal ends the iteration.
      const ended = watcher.election(name).observe({ signal: stop.signal })
      stop.abort()
      for await (const _ of ended) assert.fail('an observer whose signal aborted yields nothing')
    })

    it('a leader whose client goes away without resigning is replaced within its ttl', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const name = ctx.name('election-gone')
      const ttl = ms(1000)
      const gone = await connect(ctx.harness.url)
      const first = await gone.election(name, { ttl }).campaign({ value: 'gone' })
      const watcher = await ctx.client()
      const stop = new AbortController()
      const feed = follow(watcher, name, stop.signal)
      assert.deepEqual(await feed.next(), { value: 'gone', token: first.token })
      await gone.close() // no resign: the term ends with its lease
      const next = await (await ctx.client()).election(name, { ttl: '10s' }).campaign({ value: 'next', wait: ttl + ms(5000) })
      assert.ok(next.token > first.token)
      let change = await feed.next()
      if (change === null) change = await feed.next() // the vacancy, when the observer saw it
      assert.deepEqual(change, { value: 'next', token: next.token })
      await next.resign()
      stop.abort()
    })

    it('a lost leadership aborts its signal, and proclaim then throws LEASE_LOST', async (t) => {
      const why = await refused()
      if (why) return t.skip(why)
      const baton = await ctx.client()
      const name = ctx.name('election-lost')
      const leadership = await baton.election(name, { ttl: '10s' }).campaign({ value: 'x' })
      await baton.forceRelease(name)
      const reason = await aborted(leadership.signal)
      assert.ok(isBatonError(reason, 'LEASE_LOST'))
      await assert.rejects(leadership.proclaim('y'), (e: unknown) => isBatonError(e, 'LEASE_LOST'))
      await leadership.resign() // no-op, no throw
    })

    it('a leader killed with kill -9 is replaced within its ttl', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const why = await refused()
      if (why) return t.skip(why)
      const name = ctx.name('election-kill')
      const ttl = ms(1000)
      const leader = ctx.worker({ task: 'campaign', name, ttl, value: 'doomed' })
      const token = BigInt((await leader.line('leader')).split(' ')[1]!)
      const client = await ctx.client()
      assert.deepEqual(pick(await client.election(name).leader()), { value: 'doomed', token })
      const next = client.election(name, { ttl: '10s' }).campaign({ value: 'next', wait: ttl + ms(5000) })
      await waitersOf(client, name, 1)
      leader.kill9()
      await leader.exited
      const term = await next
      assert.ok(term.token > token)
      assert.deepEqual(pick(await client.election(name).leader()), { value: 'next', token: term.token })
      await term.resign()
    })

    it('a leader frozen (SIGSTOP) past its ttl is replaced, and its signal aborts when it runs again', async (t) => {
      if (!ctx.harness.crossProcess) return t.skip('this store lives in one process')
      const why = await refused()
      if (why) return t.skip(why)
      const name = ctx.name('election-frozen')
      const ttl = ms(1000)
      const leader = ctx.worker({ task: 'campaign', name, ttl, value: 'frozen' })
      const token = BigInt((await leader.line('leader')).split(' ')[1]!)
      leader.child.kill('SIGSTOP')
      try {
        const term = await (await ctx.client()).election(name, { ttl: '10s' }).campaign({ value: 'next', wait: ttl + ms(5000) })
        assert.ok(term.token > token)
        leader.child.kill('SIGCONT')
        // Thawed, the old leader learns it lost (its loss timer, or the store refusing its renewal).
        assert.match(await leader.line('lost'), /^lost LEASE_LOST/)
        assert.deepEqual(pick(await (await ctx.client()).election(name).leader()), { value: 'next', token: term.token }, 'the new leader keeps its term')
        await term.resign()
      } finally {
        leader.child.kill('SIGCONT')
      }
    })

    it('refuses bad input with INVALID_ARGUMENT', async () => {
      const baton = await ctx.client()
      const name = ctx.name('election-bad')
      const invalid = (e: unknown) => isBatonError(e, 'INVALID_ARGUMENT')
      assert.throws(() => baton.election(''), invalid)
      assert.throws(() => baton.election(name, { ttl: -1 }), invalid)
      assert.throws(() => baton.election(name, { permits: 2 } as never), invalid)
      const election = baton.election(name)
      await assert.rejects(election.campaign({ value: 42 as never }), invalid)
      await assert.rejects(election.campaign({ value: 'x'.repeat(4097) }), invalid)
      // PostgreSQL keeps text (no NUL), and Redis cuts its note at the first NUL: refused on every store alike.
      await assert.rejects(election.campaign({ value: 'a\0b' }), invalid)
      await assert.rejects(election.campaign({ signal: 'no' as never }), invalid)
      await assert.rejects(election.campaign({ fair: false } as never), invalid)
      assert.throws(() => election.observe({ signal: {} as never }), invalid)
      const why = await refused()
      if (why) return
      const leadership = await election.campaign({ value: 'ok' })
      await assert.rejects(leadership.proclaim(undefined as never), invalid)
      await assert.rejects(leadership.proclaim('é'.repeat(2049)), invalid)
      await assert.rejects(leadership.proclaim('a\0b'), invalid)
      assert.equal(leadership.value, 'ok', 'a refused proclaim changes nothing')
      await leadership.resign()
    })
  })
}

function pick(leader: { value: string; token: bigint } | null): { value: string; token: bigint } | null {
  return leader && { value: leader.value, token: leader.token }
}
