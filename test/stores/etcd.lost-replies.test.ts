/**
 * etcd under lost replies and dead watches, through the harness's TCP proxy
 * in front of one real member: what an attempt did in the store must be
 * found again or removed, and a watch etcd cancelled must be made again.
 * Also the typed answer to a missing user name when etcd has auth on.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect, isBatonError, type Lease } from '../../src/index.js'
import { aborted, sleep, withTimeout } from '../conformance/context.js'
import { etcdGateway, startEtcd, startSecuredEtcd, type EtcdCluster } from '../harness/etcd.js'
import { clientPool, throughProxy } from '../harness/clients.js'
import { startProxy, type Proxy } from '../harness/proxy.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'


let etcd: EtcdCluster
const { client, closeAll } = clientPool()

before(async () => {
  etcd = await startEtcd()
})
after(async () => {
  await closeAll()
  await stopAll()
})

/** A client that talks to etcd through a proxy. */
const proxied = (options: Parameters<typeof connect>[1] = {}) => throughProxy(client, 'etcd', etcd.members[0]!.port, options)

/**
 * The next reply from etcd is lost (its connection cut) and nothing gets
 * through for `ms` more: a partition that starts right after etcd applied a
 * request. Data held meanwhile is thrown away with the connections.
 */
function loseNextReplyThenPartition(proxy: Proxy): { healed: Promise<void> } {
  let healed!: () => void
  const done = new Promise<void>((resolve) => (healed = resolve))
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
    }, ms(2000))
    return 'drop'
  })
  return { healed: done }
}

describe('etcd: lost replies and dead watches', () => {
  it('an acquire whose reply is lost in a 2 s partition leaves no key behind once it heals', async () => {
    const { baton, proxy } = await proxied({ commandTimeout: ms(1000) })
    const other = await client(etcd.url)
    const name = 'lost/acquire'
    const lock = baton.mutex(name, { ttl: ms(30_000) })
    // The lease and the name's watch exist already, so the acquire sends its transaction only.
    await (await lock.acquire()).release()
    await sleep(ms(300)) // the release's own watch event is delivered before the fault is armed

    const { healed } = loseNextReplyThenPartition(proxy)
    // Two right outcomes: the client re-sends on a new connection, reaches
    // etcd once it heals and finds, and owns, its own key; or the attempt
    // fails, and its undo (which could not get through) is done once it heals.
    const outcome = await lock.acquire().catch((error: unknown) => error)
    if (isBatonError(outcome)) {
      const view = await other.inspect(name)
      assert.equal(view?.holders.length, 1, 'etcd applied the acquire whose reply was lost')
    } else {
      const granted = outcome as Lease
      assert.deepEqual((await other.inspect(name))?.holders.map((h) => h.owner), [granted.owner])
      await granted.release()
    }
    await healed
    // A new client of the same address right after the resets (grpc-js shares the connection in backoff).
    const fresh = await client(`etcd://127.0.0.1:${proxy.port}`)
    await (await fresh.mutex('lost/fresh').acquire()).release()
    // The failed attempt's undo could not get through during the partition; it must be done once it heals.
    const lease = await other.mutex(name).acquire({ wait: ms(15_000) })
    await lease.release()
  })

  it('a watch etcd cancels (compacted, after a connection blip) is made again: a forced release still reaches the holder', async () => {
    const { baton, proxy } = await proxied()
    const admin = await client(etcd.url)
    const name = 'lost/dead-watch'
    // No renewals: only the watch can tell this holder of a forced release before its ttl.
    const lease = await baton.mutex(name, { ttl: ms(60_000) }).acquire()
    for (let i = 0; i < 5; i++) await (await admin.mutex('lost/bump').acquire()).release()
    const port = etcd.members[0]!.port
    const status = await etcdGateway(port, '/v3/kv/range', { key: Buffer.from('x').toString('base64') })
    const revision = (status.header as { revision: string }).revision
    await etcdGateway(port, '/v3/kv/compaction', { revision, physical: true })
    proxy.dropConnections()
    await sleep(ms(1500)) // etcd3 reconnects and re-creates its watches from their last revision: compacted
    assert.equal(lease.signal.aborted, false)
    assert.equal(await admin.forceRelease(name), true)
    const reason = await aborted(lease.signal, ms(15_000))
    assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
  })

  it('close() during a partition returns, within the command timeout', async () => {
    const proxy = await startProxy(etcd.members[0]!.port)
    const baton = await connect(`etcd://127.0.0.1:${proxy.port}`, { commandTimeout: ms(1000) })
    await baton.mutex('lost/close', { ttl: ms(10_000) }).acquire()
    proxy.pause()
    try {
      await withTimeout(baton.close(), ms(15_000), 'close() during a partition')
    } finally {
      proxy.dropConnections()
      proxy.resume()
    }
  })

  it('auth on and no user in the URL: UNAUTHORIZED at once, naming the missing user name', async () => {
    const secured = await startSecuredEtcd()
    try {
      const error = await withTimeout(connect(secured.url, { connectTimeout: ms(5000) }).catch((e: unknown) => e), ms(15_000), 'connect to fail')
      assert.ok(isBatonError(error, 'UNAUTHORIZED'), String(error))
      assert.match(error.message, /user name/i)
      assert.equal(error.retryable, false)
    } finally {
      await secured.stop()
    }
  })
})
