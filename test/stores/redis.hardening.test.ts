/**
 * Redis-specific regressions of the hardening issue: replies lost in flight,
 * late wake-ups, downgrades crossing releases and renewals, forced releases,
 * herds after a holder dies, values baton did not write, bounded state.
 * Real redis-server processes; faults through the harness's TCP proxy.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import type { HoldRef } from '../../src/core/driver.js'
import { aborted, sleep, withTimeout } from '../conformance/context.js'
import { dropOnce, isPush, startProxy, type Proxy } from '../harness/proxy.js'
import { redisCommand, startRedis, stopAll, type RedisServer } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { freePort } from '../harness/ports.js'

let server: RedisServer
let proxy: Proxy
let raw: Redis
const clients: Baton[] = []
let counter = 0

before(async () => {
  server = await startRedis()
  proxy = await startProxy(server.port)
  raw = new Redis(server.port, '127.0.0.1')
})
after(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})))
  raw.disconnect()
  await stopAll()
})

async function client(options: { proxied?: boolean; query?: string } = {}): Promise<Baton> {
  const port = options.proxied ? proxy.port : server.port
  const baton = await connect(`redis://127.0.0.1:${port}${options.query ?? ''}`)
  clients.push(baton)
  return baton
}

const fresh = (label: string): string => `hardening/${label}/${++counter}`

/** Calls of one command counted by the server (scripts' inner calls included). */
async function calls(command: string): Promise<number> {
  const stats = await redisCommand(server.port, ['INFO', 'commandstats'])
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(String(stats))?.[1] ?? 0)
}

describe('redis: a reply lost in flight', () => {
  it('tryAcquire gets the hold its re-sent script finds, and leaves nothing behind', async () => {
    const baton = await client({ proxied: true })
    const name = fresh('lost-reply-try')
    const rule = dropOnce((chunk) => !isPush(chunk))
    proxy.onReply(rule)
    let lease
    try {
      lease = await baton.mutex(name).tryAcquire()
    } finally {
      proxy.onReply(undefined)
    }
    assert.ok(rule.dropped, 'the proxy dropped the reply')
    assert.ok(lease, 'the owner gets the hold its first run made, not a "busy" behind itself')
    const info = await baton.inspect(name)
    assert.equal(info?.holders.length, 1)
    assert.equal(info?.holders[0]?.owner, lease.owner)
    assert.equal(info?.waiters.length, 0)
    await lease.release()
    assert.equal(await baton.inspect(name), null, 'nothing is left once released')
  })

  it('acquire on a free lock resolves at once, not in line behind itself', async () => {
    const [a, b] = [await client({ proxied: true }), await client()]
    const name = fresh('lost-reply-wait')
    const rule = dropOnce((chunk) => !isPush(chunk))
    proxy.onReply(rule)
    let lease
    try {
      lease = await a.mutex(name).acquire({ wait: ms(20_000) })
    } finally {
      proxy.onReply(undefined)
    }
    assert.ok(rule.dropped)
    const info = await a.inspect(name)
    assert.deepEqual(info?.holders.map((h) => h.token), [lease.token])
    assert.equal(info?.waiters.length, 0, 'the owner is not in line behind its own hold')
    await lease.release()
    // Another client gets the released lock at once: no stale entry of `a` is served first.
    const next = await b.mutex(name).tryAcquire()
    assert.ok(next, 'free after the release')
    await next.release()
  })

  it('a read hold handed over with its wake-up delayed past the retry is one hold, not two', async () => {
    const [writerClient, readerClient] = [await client(), await client({ proxied: true })]
    const name = fresh('late-wake-read')
    const writer = await writerClient.rwlock(name).write().acquire()
    // The reader's line entry needs refreshing every ttl/3: that retry runs
    // while the hand-over's wake-up is still held back by the proxy.
    const reading = readerClient.rwlock(name, { ttl: ms(900) }).read().acquire({ wait: ms(20_000) })
    await waitUntil(async () => (await writerClient.inspect(name))?.waiters.length === 1)
    proxy.onReply((chunk) => (isPush(chunk) ? { delayMs: ms(2000) } : 'pass'))
    try {
      await writer.release()
      const reader = await reading
      const info = await writerClient.inspect(name)
      assert.deepEqual(info?.holders.map((h) => [h.owner, h.token]), [[reader.owner, reader.token]], 'one read hold')
      await reader.release()
      assert.equal(await writerClient.inspect(name), null, 'no ghost read hold blocks writers')
    } finally {
      proxy.onReply(undefined)
    }
  })

  it('every script is idempotent: the same attempt, release and downgrade run twice', async () => {
    const baton = await client()
    const driver = baton.driver
    const name = fresh('twice')
    const spec = { name, kind: 'rwlock', mode: 'write', fair: false, permits: 1, lockDelayMs: 0 } as const
    const attempt = { ...spec, owner: `${'x'.repeat(8)}.twice1`, ttlMs: ms(10_000), enqueue: true, queueTtlMs: ms(10_000), retry: false }
    const first = await driver.acquire(attempt)
    const second = await driver.acquire(attempt)
    assert.equal(first.status, 'granted')
    assert.deepEqual(second, first, 'the second run answers as the first')
    const reader = { ...attempt, mode: 'read' as const, owner: `${'x'.repeat(8)}.twice2` }
    assert.equal((await driver.acquire(reader)).status, 'busy')
    assert.equal((await driver.acquire(reader)).status, 'busy')
    assert.equal((await baton.inspect(name))?.waiters.length, 1, 'in line once')
    const hold: HoldRef = { ...spec, owner: attempt.owner, token: (first as { token: bigint }).token }
    assert.equal(await driver.downgrade!(hold), true)
    assert.equal(await driver.downgrade!(hold), true, 'a re-run downgrade finds the read hold')
    const info = await baton.inspect(name)
    assert.equal(info?.holders.length, 2, 'the downgraded holder and the admitted reader')
    const readerHold = info!.holders.find((h) => h.owner === reader.owner)!
    assert.equal((await driver.acquire(reader)).status, 'granted', 'the admitted reader asking again gets its hold')
    assert.equal((await baton.inspect(name))?.holders.length, 2, 'not a third hold')
    await driver.release({ ...reader, token: readerHold.token })
    assert.equal(await driver.release({ ...reader, token: readerHold.token }), false)
    await driver.release(hold)
    assert.equal(await baton.inspect(name), null)
  })
})

describe('redis: who is told of a release', () => {
  it('a client releasing its own holds publishes nothing; a release of another client\'s hold tells that client once', async () => {
    const [a, b] = [await client(), await client()]
    const heard: string[] = []
    const listener = new Redis(server.port, '127.0.0.1')
    listener.on('pmessage', (_pattern, channel, message) => heard.push(`${channel.endsWith('marker') ? 'marker' : channel}: ${message}`))
    await listener.psubscribe('*')
    try {
      const grant = async (owner: string, mode: 'exclusive' | 'read'): Promise<HoldRef> => {
        const spec = { name: fresh(`told-${mode}`), kind: mode === 'read' ? 'rwlock' : 'mutex', mode, fair: false, permits: 1, lockDelayMs: 0 } as const
        const result = await a.driver.acquire({ ...spec, owner, ttlMs: ms(30_000), enqueue: false, queueTtlMs: 0, retry: false })
        assert.equal(result.status, 'granted')
        return { ...spec, owner, token: (result as { token: bigint }).token }
      }
      const own = `${a.keeper.clientId}.told`
      // Both fast paths (an exclusive hold, a shared one), and the slow path (released by owner, without its token).
      for (const mode of ['exclusive', 'read'] as const) assert.equal(await a.driver.release(await grant(`${own}${mode}`, mode)), true)
      const { token: _, ...byOwner } = await grant(`${own}slow`, 'exclusive')
      assert.equal(await a.driver.release(byOwner), true)
      const other = await grant(`${own}other`, 'exclusive')
      assert.equal(await b.driver.release(other), true)
      assert.equal(await b.driver.release(other), false, 'released once')
      await raw.publish('marker', 'end')
      await withTimeout((async () => {
        while (!heard.includes('marker: end')) await sleep(5)
      })(), ms(10_000), 'the marker came back')
      assert.deepEqual(heard, [`baton:wake:${a.keeper.clientId}: d|${other.owner}`, 'marker: end'])
    } finally {
      listener.disconnect()
    }
  })
})

describe('redis: downgrade races', () => {
  it('releasing the read handle while the downgrade is in flight leaves no read hold', async () => {
    const baton = await client()
    const name = fresh('downgrade-release')
    const lock = baton.rwlock(name)
    const write = await lock.write().acquire()
    const read = await write.run(() => lock.read().acquire())
    await Promise.all([write.release(), read.release()])
    assert.equal(await baton.inspect(name), null)
    const other = await (await client()).rwlock(name).write().tryAcquire()
    assert.ok(other, 'a writer gets the name at once')
    await other.release()
  })

  it('a renewal sent with the write member during a downgrade renews the read hold', async () => {
    const baton = await client()
    const name = fresh('downgrade-extend')
    const write = await baton.rwlock(name, { ttl: ms(5000) }).write().acquire()
    const ref: HoldRef = { name, kind: 'rwlock', mode: 'write', fair: false, permits: 1, lockDelayMs: 0, owner: write.owner, token: write.token }
    const [downgraded, [renewed]] = await Promise.all([baton.driver.downgrade!(ref), baton.driver.extend([ref], ms(5000))])
    assert.equal(downgraded, true)
    assert.equal(renewed?.status, 'extended', 'the live hold is not reported lost')
    await baton.driver.release(ref)
    assert.equal(await baton.inspect(name), null)
  })
})

describe('redis: dead holders', () => {
  it('after a holder dies, only the head of the line hits Redis at its lease end', async () => {
    const holderClient = await client()
    const waiterClient = await client()
    const name = fresh('herd')
    const waiters = 20
    await holderClient.mutex(name, { ttl: ms(800) }).acquire() // never released nor renewed: a dead holder
    const before = await calls('evalsha')
    // Waiters refresh their line entry every ttl/3 = 2 s, well after the holder's end.
    const waiting = Array.from({ length: waiters }, () => waiterClient.mutex(name, { ttl: ms(6000) }).acquire({ wait: ms(6000) }))
    const first = await Promise.race(waiting)
    const spent = (await calls('evalsha')) - before
    // One attempt each to join, then one for the head at the lease end (and
    // the INFO calls of this test): not one per waiter.
    assert.ok(spent <= waiters + 4, `${spent} scripts for ${waiters} waiters`)
    await Promise.all(waiting.map(async (p) => (await p).release()))
    void first
  })
})

describe('redis: a dropped subscriber', () => {
  it('after CLIENT KILL TYPE pubsub, a waiter whose hand-over was missed gets it at once, with its full ttl', async () => {
    const [holderClient, waiterClient] = [await client(), await client()]
    const name = fresh('pubsub-kill')
    const ttl = ms(60_000)
    const holder = await holderClient.mutex(name).acquire()
    // Without a wake-up this waiter would look again only when its line entry needs refreshing (ttl/3 = 20 s).
    const waiting = waiterClient.mutex(name, { ttl }).acquire({ wait: ttl })
    await waitUntil(async () => (await holderClient.inspect(name))?.waiters.length === 1)
    await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    await holder.release() // its hand-over wake-up goes to nobody
    const lease = await withTimeout(waiting, ms(10_000), 'the waiter to be nudged after resubscribing')
    assert.ok(lease.remainingMs() > ttl / 2, `${lease.remainingMs()} ms left of ${ttl}`)
    await lease.release()
  })
})

describe('redis: values baton did not write', () => {
  it('inspect, list and acquire report a BatonError; forceRelease clears them', async () => {
    const baton = await client()
    for (const [suffix, write] of [
      ['x', (key: string) => raw.set(key, 'hello')],
      ['h', (key: string) => raw.set(key, 'not a zset')],
      ['t', (key: string) => raw.lpush(key, 'nope')],
      ['q', (key: string) => raw.hset(key, 'a', 'b')],
    ] as const) {
      const name = fresh(`foreign-${suffix}`)
      await write(`baton:{${name}}:${suffix}`)
      const seen = await baton.inspect(name).catch((e: unknown) => e)
      assert.ok(isBatonError(seen, 'INVALID_ARGUMENT'), `inspect with a foreign :${suffix}: ${String(seen)}`)
      assert.match(seen.message, /did not write/)
      // list() reads the index of names in use, which only baton's scripts fill: another program's keys list nothing.
      assert.deepEqual(await baton.list({ prefix: name }), [])
      const taken = await baton.mutex(name).acquire({ wait: ms(200) }).catch((e: unknown) => e)
      assert.ok(isBatonError(taken, 'INVALID_ARGUMENT'), `acquire with a foreign :${suffix}: ${String(taken)}`)
      assert.equal(await baton.forceRelease(name), true)
      assert.equal(await baton.inspect(name), null)
      const lease = await baton.mutex(name).acquire()
      await lease.release()
    }
  })
})

describe('redis: bounded state', () => {
  it('?fenceTtl: names acquired and released leave no keys after the window, and tokens keep increasing', async () => {
    const baton = await client({ query: '?fenceTtl=1s&prefix=fence' })
    const names = Array.from({ length: 10_000 }, (_, i) => `idle/${i}`)
    let last = 0n
    for (let i = 0; i < names.length; i += 250) {
      await Promise.all(names.slice(i, i + 250).map(async (name) => {
        const lease = await baton.mutex(name).acquire()
        if (name === 'idle/0') last = lease.token
        await lease.release()
      }))
    }
    assert.ok(await countKeys('fence:*') > 0)
    await waitUntil(async () => (await countKeys('fence:*')) === 0, ms(15_000))
    const again = await baton.mutex('idle/0').acquire()
    assert.ok(again.token > last, `${again.token} must exceed ${last}`)
    await again.release()
  })
})

async function countKeys(pattern: string): Promise<number> {
  let cursor = '0'
  let count = 0
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    count += keys.length
  } while (cursor !== '0')
  return count
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = ms(10_000)): Promise<void> {
  await withTimeout((async () => {
    while (!(await check())) await sleep(20)
  })(), timeoutMs, 'a condition')
}

describe('redis: weighted permits, a head that fits but has not come back yet', () => {
  it('a non-fair newcomer takes only the room the head of the line leaves', async () => {
    // The head's holder expired and its next attempt is not in yet (a paused
    // client): light newcomers must not take the room it waits for.
    const [a, c] = [await client(), await client()]
    const name = fresh('weighted-head-back')
    const spec = { name, kind: 'semaphore', mode: 'permit', fair: false, permits: 8, lockDelayMs: 0 } as const
    const request = { ...spec, ttlMs: ms(300), enqueue: false, queueTtlMs: ms(60_000), retry: false }
    const full = await a.driver.acquire({ ...request, owner: `${a.keeper.clientId}.full`, weight: 8 })
    assert.equal(full.status, 'granted')
    // A head of weight 4 that never comes back on its own (its client does not retry).
    const head = `${a.keeper.clientId}.head`
    const queued = await a.driver.acquire({ ...request, owner: head, weight: 4, enqueue: true, ttlMs: ms(20_000) })
    assert.equal(queued.status, 'busy')
    while ((await c.inspect(name))?.holders.length) await sleep(ms(50))
    const semaphore = c.semaphore(name, { permits: 8, ttl: '20s' })
    const light = []
    for (let i = 0; i < 8; i++) {
      const lease = await semaphore.tryAcquire({ weight: 1 })
      if (lease) light.push(lease)
    }
    assert.equal(light.length, 4, 'the newcomers took the head\'s room')
    const view = await c.inspect(name)
    assert.deepEqual(view?.waiters.map((w) => w.weight), [4])
    const back = await a.driver.acquire({ ...request, owner: head, weight: 4, enqueue: true, ttlMs: ms(20_000), retry: true })
    assert.equal(back.status, 'granted', 'the head fits when it comes back')
    for (const lease of light) await lease.release()
    assert.equal(await a.driver.release({ ...spec, owner: head }), true)
  })
})

describe('redis: a release in the lock delay', () => {
  it('keeps the expired hold\'s phantom and answers false, as the memory store does', async () => {
    // Released through another client (a lock server's other instance) after the lease ran out:
    // the lock delay must still keep the name (its whole weight for a permit), and nothing was held.
    const [a, b] = [await client(), await client()]
    const mutexName = fresh('delay-mutex')
    const semName = fresh('delay-permit')
    const held = await a.mutex(mutexName, { ttl: ms(300), lockDelay: '30s' }).acquire()
    const permit = await a.semaphore(semName, { permits: 8, ttl: ms(300), lockDelay: '30s' }).acquire({ weight: 5 })
    while ((await b.inspect(mutexName))?.holders.length || (await b.inspect(semName))?.holders.length) await sleep(ms(50))
    const mutexRef = { name: mutexName, kind: 'mutex', mode: 'exclusive', fair: false, permits: 1, lockDelayMs: 30_000, owner: held.owner, token: held.token } as const
    const permitRef = { name: semName, kind: 'semaphore', mode: 'permit', fair: false, permits: 8, lockDelayMs: 30_000, weight: 5, owner: permit.owner, token: permit.token } as const
    assert.equal(await b.driver.release(mutexRef), false, 'an expired mutex hold was not held')
    assert.equal(await b.driver.release(permitRef), false, 'an expired permit was not held')
    assert.equal(await b.mutex(mutexName).tryAcquire(), null, 'the lock delay still keeps the mutex')
    assert.equal(await b.semaphore(semName, { permits: 8 }).tryAcquire({ weight: 4 }), null, 'the lock delay still keeps the permit\'s weight')
    const light = await b.semaphore(semName, { permits: 8 }).tryAcquire({ weight: 3 })
    assert.ok(light, 'the rest of the permits are free')
    await light.release()
  })
})

describe('redis: an attempt reported failed never takes effect later (ghost holds)', () => {
  /**
   * A client through the proxy, with a short command deadline, whose
   * give-backs (the core's releases that undo a failed attempt) are
   * collected, so the test can wait until one has failed too.
   */
  async function faultyClient(): Promise<{ baton: Baton; giveBacks: Promise<unknown>[] }> {
    const baton = await connect(`redis://127.0.0.1:${proxy.port}`, { commandTimeout: ms(1000) })
    clients.push(baton)
    const giveBacks: Promise<unknown>[] = []
    const release = baton.driver.release.bind(baton.driver)
    baton.driver.release = (hold, ...rest) => {
      const sent = release(hold, ...rest)
      if (!('token' in hold)) giveBacks.push(sent.catch((e: unknown) => e))
      return sent
    }
    return { baton, giveBacks }
  }

  /** Reconnects the proxy to the server, then waits until `baton` has made a round trip after it (and one more). */
  async function heal(baton: Baton, name: string): Promise<void> {
    proxy.retarget(server.port)
    await waitUntil(() => baton.inspect(name).then(() => true, () => false))
    await baton.inspect(name)
  }

  it('an attempt cut off on its way, failed by its deadline, is not run by the reconnect', async () => {
    const { baton, giveBacks } = await faultyClient()
    const name = fresh('ghost-unsent')
    const dead = await freePort()
    proxy.pause() // the attempt stays in the proxy: Redis never sees this copy
    let attempt: Promise<unknown>
    try {
      attempt = baton.mutex(name, { ttl: ms(60_000) }).tryAcquire()
      await sleep(ms(50))
      proxy.retarget(dead) // reconnects fail until heal(): ioredis flushes its offline queue meanwhile
      proxy.dropConnections()
    } finally {
      proxy.resume()
    }
    const error = await attempt.catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    await withTimeout(Promise.all(giveBacks), ms(10_000), 'the give-back to fail while the server is unreachable')
    await heal(baton, name)
    assert.equal(await (await client()).inspect(name), null, 'nobody holds the name: the failed attempt did not run after the reconnect')
  })

  it('a forced release cut off on its way, failed by its deadline, does not end the next holder\'s hold after the reconnect', async () => {
    const { baton } = await faultyClient()
    const name = fresh('ghost-force')
    const dead = await freePort()
    const first = await (await client()).mutex(name, { ttl: ms(60_000) }).acquire()
    await first.release()
    proxy.pause() // the forced release stays in the proxy: Redis never sees this copy
    let forced: Promise<unknown>
    try {
      forced = baton.forceRelease(name)
      await sleep(ms(50))
      proxy.retarget(dead)
      proxy.dropConnections()
    } finally {
      proxy.resume()
    }
    const error = await forced.catch((e: unknown) => e)
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    // The caller was told it failed; someone takes the name meanwhile.
    const next = await (await client()).mutex(name, { ttl: ms(60_000) }).acquire()
    await heal(baton, name)
    assert.equal((await (await client()).inspect(name))?.holders[0]?.owner, next.owner, 'the next holder still holds')
    assert.equal(next.signal.aborted, false)
    await next.release()
  })

  it('a forced release whose answer is lost with its connection is not sent again after the reconnect', async () => {
    // A deadline long enough that ioredis, not the deadline, decides: it keeps a call that was
    // out when its connection dropped and writes it again once reconnected.
    const baton = await connect(`redis://127.0.0.1:${proxy.port}`, { commandTimeout: ms(30_000) })
    clients.push(baton)
    const other = await client()
    const name = fresh('force-resent')
    await other.mutex(name, { ttl: ms(60_000) }).acquire()
    // The forced release runs; its answer (:1) is dropped with the connection, and the
    // reconnect hangs in the paused proxy until the name has a new holder.
    proxy.onReply(dropOnce((chunk) => {
      if (chunk.toString('latin1') !== ':1\r\n') return false
      proxy.pause()
      return true
    }))
    let next
    let forced: Promise<unknown>
    try {
      forced = baton.forceRelease(name).catch((e: unknown) => e)
      await waitUntil(async () => (await other.inspect(name)) === null)
      next = await other.mutex(name, { ttl: ms(60_000) }).acquire()
    } finally {
      proxy.onReply(undefined)
      proxy.resume()
    }
    const outcome = await forced
    assert.ok(isBatonError(outcome, 'BACKEND_UNAVAILABLE'), `the caller is told its answer was lost, got ${String(outcome)}`)
    await baton.inspect(name) // a round trip on the reconnected connection, behind anything written again
    assert.equal((await other.inspect(name))?.holders[0]?.owner, next.owner, 'the next holder still holds')
    assert.equal(next.signal.aborted, false)
    await next.release()
  })

  it('a renewal failed by its deadline that runs late is given back when the lease runs out', async () => {
    const { baton, giveBacks } = await faultyClient()
    const name = fresh('late-extend')
    const lease = await baton.mutex(name, { ttl: ms(3000) }).acquire()
    proxy.pause() // the renewal waits in the proxy past its deadline, then reaches Redis and runs
    let error: unknown
    try {
      error = await lease.extend(ms(120_000)).catch((e: unknown) => e)
    } finally {
      proxy.resume()
    }
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    await waitUntil(async () => ((await (await client()).inspect(name))?.holders[0]?.expiresAt ?? 0) > Date.now() + ms(30_000))
    await aborted(lease.signal, ms(15_000)) // the lease ran out here: nobody uses the hold the late renewal kept
    await waitUntil(async () => giveBacks.length > 0)
    await Promise.all(giveBacks)
    assert.equal(await (await client()).inspect(name), null, 'the hold the late renewal kept was given back')
  })

  it('an attempt that ran but whose reply was cut off is undone after the reconnect, though its give-back failed', async () => {
    const { baton, giveBacks } = await faultyClient()
    const name = fresh('ghost-ran')
    const dead = await freePort()
    // The reply is lost with the connection, and reconnects fail until heal().
    // Only the attempt's reply: a fast-path grant answers its token alone (a
    // bulk string of digits); other clients' connections pass the proxy too.
    proxy.onReply(dropOnce((chunk) => {
      if (!/^\$\d+\r\n\d+\r\n$/.test(chunk.toString('latin1'))) return false
      proxy.retarget(dead)
      return true
    }))
    let error: unknown
    try {
      error = await baton.mutex(name, { ttl: ms(60_000) }).tryAcquire().catch((e: unknown) => e)
    } finally {
      proxy.onReply(undefined)
    }
    assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    assert.equal((await (await client()).inspect(name))?.holders.length, 1, 'the attempt ran in Redis')
    await withTimeout(Promise.all(giveBacks), ms(10_000), 'the give-back to fail while the server is unreachable')
    await heal(baton, name)
    assert.equal(await (await client()).inspect(name), null, 'the failed attempt\'s hold was given back after the reconnect')
  })
})
