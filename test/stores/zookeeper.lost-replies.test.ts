/**
 * ZooKeeper under lost and stalled replies, through the harness's TCP proxy
 * in front of one real server: a node made by an attempt whose reply was
 * lost is found and removed (also one the library sent late, after the
 * attempt failed while its session reconnected), a waiter whose re-read failed after its watch
 * fired is still granted, and an endpoint that accepts and closes gives a
 * prompt typed error.
 */
import assert from 'node:assert/strict'
import { createServer, type AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError } from '../../src/index.js'
import { aborted, nextEvent, sleep, withTimeout } from '../conformance/context.js'
import type { WaitEvent } from '../../src/core/events.js'
import { clientPool, throughProxy } from '../harness/clients.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { startZookeeper, type ZkEnsemble } from '../harness/zookeeper.js'

let zk: ZkEnsemble
const { client, closeAll } = clientPool()

before(async () => {
  zk = await startZookeeper()
})
after(async () => {
  await closeAll()
  await stopAll()
})

const proxied = (options: Parameters<typeof connect>[1] = {}) => throughProxy(client, 'zk', zk.servers[0]!.port, options)

/** ZooKeeper frames start with their length, then the xid: -1 is a watch notification. */
function isNotification(chunk: Buffer): boolean {
  for (let at = 0; at + 8 <= chunk.length; at += 4 + chunk.readInt32BE(at)) {
    if (chunk.readInt32BE(at + 4) === -1) return true
  }
  return false
}

describe('zookeeper: lost and stalled replies', () => {
  it('a create whose reply is lost in a 3 s partition leaves no node behind once it heals', async () => {
    const { baton, proxy } = await proxied({ commandTimeout: ms(1000) })
    const other = await client(`zk://${zk.hosts}`)
    const name = 'lost/create'
    const lock = baton.mutex(name, { ttl: ms(30_000) })
    // The session and the name's parent exist already, so the acquire sends its create and read only.
    await (await lock.acquire()).release()
    await sleep(ms(300)) // the release's own watch event is delivered before the fault is armed

    let healed!: () => void
    const healing = new Promise<void>((resolve) => (healed = resolve))
    let armed = true
    proxy.onReply(() => {
      if (!armed) return 'pass'
      armed = false
      proxy.pause()
      setTimeout(() => {
        proxy.onReply(undefined)
        proxy.dropConnections()
        proxy.resume()
        healed()
      }, ms(3000)) // longer than the attempt's timeout and its undo's, so both fail inside it
      return 'drop'
    })
    await assert.rejects(lock.acquire(), (e) => isBatonError(e))
    const view = await other.inspect(name)
    assert.equal(view?.holders.length, 1, 'ZooKeeper made the node whose create reply was lost')
    await healing
    // The failed attempt's undo could not get through during the partition; it must be done once it heals.
    const lease = await other.mutex(name).acquire({ wait: ms(15_000) })
    await lease.release()
  })

  it('a waiter whose re-read stalls after its watch fired is still granted', async () => {
    const { baton, proxy } = await proxied({ commandTimeout: ms(1000) })
    const holderClient = await client(`zk://${zk.hosts}`)
    const name = 'lost/stalled-reread'
    const holder = await holderClient.mutex(name, { ttl: ms(30_000) }).acquire()
    const queued = nextEvent<WaitEvent>('baton:wait', (m) => m.name === name)
    // A long ttl: its session's heartbeat is then rare, so the stall below cuts no connection
    // (a reconnect would make the library set the watch again, hiding the missed re-read).
    const waiting = baton.mutex(name, { ttl: ms(20_000) }).acquire({ wait: ms(15_000) })
    await queued
    await sleep(ms(500)) // its exists-watch on the holder's node is set by now
    // The watch's notice passes; the replies right behind it (the line re-read among them) are held 2.5 s.
    let noticeAt: number | undefined
    let stalled = 0
    proxy.onReply((chunk) => {
      if (noticeAt === undefined) {
        if (isNotification(chunk)) noticeAt = performance.now()
        return 'pass'
      }
      if (performance.now() - noticeAt > ms(500)) return 'pass'
      stalled += 1
      return { delayMs: ms(2500) }
    })
    await holder.release()
    const lease = await waiting
    assert.ok(stalled > 0, 'the re-read was stalled')
    assert.ok(lease.token > holder.token)
    await lease.release()
  })

  it('a forced release whose notice is lost with its connection still reaches the holder once the session reconnects', async () => {
    const { baton, proxy } = await proxied()
    const admin = await client(`zk://${zk.hosts}`)
    const name = 'lost/loss-notice'
    // Renewals every 10 s: only the notice (or a re-check after a reconnect) can tell this holder sooner.
    const holder = await baton.mutex(name, { ttl: ms(30_000) }).acquire({ autoExtend: true })
    await sleep(ms(300)) // the watch on its own node is set
    let dropped = false
    proxy.onReply((chunk) => {
      if (dropped || !isNotification(chunk)) return 'pass'
      dropped = true
      return 'drop'
    })
    assert.equal(await admin.forceRelease(name), true)
    const reason = await aborted(holder.signal, ms(6000))
    assert.ok(dropped, 'the notice was dropped')
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
  })

  it('a create the library sends late, after its attempt failed while the session reconnected, is undone: no ghost stands in line', async () => {
    const { baton, proxy } = await proxied({ commandTimeout: ms(1000) })
    const other = await client(`zk://${zk.hosts}`)
    const name = 'lost/late-create'
    // The admin session (inspect) first, then the hold session (the acquire): each on its own connection.
    await baton.inspect(name)
    const adminConnections = new Set(proxy.connections())
    const lock = baton.mutex(name, { ttl: ms(30_000) })
    await (await lock.acquire()).release()
    // New connections now land on an endpoint that closes them: the hold session,
    // cut, keeps reconnecting (the library holds its requests until it is back); the admin session stays up.
    const closer = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve))
    try {
      proxy.retarget((closer.address() as AddressInfo).port)
      for (const c of proxy.connections()) if (!adminConnections.has(c)) c.destroy()
      await sleep(ms(300)) // the library has seen its socket close: requests wait in its queue now, unsent
      await assert.rejects(lock.acquire(), (e) => isBatonError(e))
      await sleep(ms(500)) // the failed attempt's undo had its first go meanwhile
    } finally {
      proxy.retarget(zk.servers[0]!.port)
      closer.close()
    }
    // Back: the hold session sends the create it kept, after the attempt failed. A probe on that
    // same session (the same ttl) is answered only after it, so the late create has landed by
    // the time the other client asks: it stands first in line unless the undo removed it.
    // (Without this, the other's create could land first and hide the ghost behind it.)
    await (await baton.mutex(`${name}-probe`, { ttl: ms(30_000) }).acquire({ wait: ms(15_000) })).release()
    const lease = await other.mutex(name).acquire({ wait: ms(15_000) })
    await lease.release()
  })

  it('an endpoint that accepts and closes at once (maxClientCnxns): connect fails promptly with BACKEND_UNAVAILABLE', async () => {
    const closer = createServer((socket) => socket.end())
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve))
    const { port } = closer.address() as AddressInfo
    try {
      const error = await withTimeout(connect(`zk://127.0.0.1:${port}`, { connectTimeout: ms(1000) }).catch((e: unknown) => e), ms(15_000), 'connect to fail')
      assert.ok(isBatonError(error, 'BACKEND_UNAVAILABLE'), String(error))
    } finally {
      closer.close()
    }
  })
})
