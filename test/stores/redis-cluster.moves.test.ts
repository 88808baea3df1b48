/**
 * Redis Cluster >= 7 under the faults that move or drop its subscriptions:
 * a sharded subscriber connection killed, a slot migrated with locks held
 * and waiters in line (the steps of `redis-cli --cluster reshard`).
 * Every bound below is far under the fallbacks (a holder's renewal at
 * ttl/3, a waiter's line refresh), which the ttls make long: a grant or a
 * loss seen within it came by a notice, or by the re-check that follows a
 * resubscription; no test reads a duration.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { connect, isBatonError, type Baton } from '../../src/index.js'
import { loadScript } from '../../src/drivers/redis/scripts.js'
import { baseKey, NAME_KEY_SUFFIXES, shardedWakeChannelPrefix, slotOfName } from '../../src/drivers/redis/keys.js'
import { aborted, withTimeout } from '../conformance/context.js'
import {
  clusterSlotOwner, moveClusterSlot, redisPipeline, shardedSubscriberIds, startRedisCluster, stopAll, type RedisClusterSetup,
} from '../harness/servers.js'
import { ms } from '../harness/timing.js'

after(() => stopAll())

/** Long enough that neither a renewal (ttl/3) nor a line refresh can explain what a test sees within PROMPT. */
const TTL = ms(60_000)
const PROMPT = ms(8_000)

async function withCluster(body: (cluster: RedisClusterSetup, clients: Baton[]) => Promise<void>): Promise<void> {
  const cluster = await startRedisCluster(3)
  const clients = await Promise.all([0, 1, 2].map(() => connect(cluster.url)))
  try {
    await body(cluster, clients)
  } finally {
    await Promise.all(clients.map((c) => c.close()))
    await cluster.stop()
  }
}

/** The force-release script as the driver sends it on a Cluster (every key of the name declared). */
function forceReleaseCommand(name: string): string[] {
  const base = baseKey('baton', name)
  const keys = [base, ...NAME_KEY_SUFFIXES.map((suffix) => base + suffix)]
  return ['EVAL', loadScript('force-release'), String(keys.length), ...keys, shardedWakeChannelPrefix('baton', slotOfName(name)), '600000']
}

describe('redis cluster: lost subscriptions and moved slots', () => {
  it('a killed sharded subscriber: a forced release made meanwhile still ends the old hold, and the waiter gets the name, promptly', async () => {
    await withCluster(async (cluster, [holder, waiter]) => {
      const name = 'moves/killed-subscriber'
      const lease = await holder!.mutex(name, { ttl: TTL }).acquire()
      const waiting = waiter!.mutex(name, { ttl: TTL }).acquire({ wait: ms(120_000) })
      waiting.catch(() => {}) // awaited below; a failure is the test's, not an unhandled rejection
      const node = await clusterSlotOwner(cluster, slotOfName(name))
      // Both clients' subscribers on the slot's node are up (the waiter's, once it is in line).
      let ids: string[] = []
      await withTimeout((async () => {
        while ((ids = await shardedSubscriberIds(node.port)).length < 2) await new Promise((r) => setTimeout(r, 20))
      })(), ms(10_000), 'both sharded subscribers')
      const view = await holder!.inspect(name)
      assert.equal(view?.waiters.length, 1, 'the waiter is in line')
      // Killed, then forced in the same write: the notices are published while nobody listens.
      const replies = await redisPipeline(node.port, [...ids.map((id) => ['CLIENT', 'KILL', 'ID', id]), forceReleaseCommand(name)])
      assert.ok(!replies.some((r) => r instanceof Error), String(replies))
      const reason = await aborted(lease.signal, PROMPT)
      assert.ok(isBatonError(reason, 'LEASE_LOST'), String(reason))
      const granted = await withTimeout(waiting, PROMPT, 'the waiter\'s grant')
      assert.equal(granted.held, true)
      await granted.release()
    })
  })

  it('a slot migrated with a lock held and a waiter in line: the hold stays held, renews, and the waiter gets it on release', async () => {
    await withCluster(async (cluster, [holder, waiter, admin]) => {
      const name = 'moves/migrated'
      const slot = slotOfName(name)
      const lease = await holder!.mutex(name, { ttl: TTL }).acquire()
      const waiting = waiter!.mutex(name, { ttl: TTL }).acquire({ wait: ms(120_000) })
      waiting.catch(() => {}) // awaited below; a failure is the test's, not an unhandled rejection
      await withTimeout((async () => {
        while ((await admin!.inspect(name))?.waiters.length !== 1) await new Promise((r) => setTimeout(r, 20))
      })(), ms(10_000), 'the waiter in line')
      const from = await clusterSlotOwner(cluster, slot)
      const to = cluster.nodes.find((n) => n !== from)!
      // Calls made with the slot open, before and after its keys moved: they
      // must see the hold (the node serves them while it has every key, or
      // they wait for the move), never a free name or a lost hold.
      const during: Promise<unknown>[] = []
      const calls = () => {
        during.push(admin!.inspect(name), lease.extend(TTL), waiter!.mutex(name).tryAcquire())
      }
      await moveClusterSlot(cluster, slot, to, { whileMigrating: calls, whileMoving: calls })
      const [beforeView, beforeExtend, beforeTry, afterView, afterExtend, afterTry] = await Promise.all(during)
      for (const view of [beforeView, afterView]) {
        assert.equal((view as Awaited<ReturnType<Baton['inspect']>>)?.holders[0]?.owner, lease.owner, 'inspect names the holder during the move')
      }
      assert.equal(beforeExtend, undefined)
      assert.equal(afterExtend, undefined)
      assert.equal(beforeTry, null, 'the name is busy during the move')
      assert.equal(afterTry, null, 'the name is busy during the move')
      assert.equal(lease.held, true)
      assert.equal(lease.signal.aborted, false, 'no LEASE_LOST')
      assert.equal((await clusterSlotOwner(cluster, slot)).port, to.port)
      // After the move: renewal, inspect, and the hand-over by its notice on the new owner.
      await lease.extend(TTL)
      assert.equal((await admin!.inspect(name))?.holders[0]?.owner, lease.owner)
      await lease.release()
      const granted = await withTimeout(waiting, PROMPT, 'the waiter\'s grant after the move')
      assert.equal(granted.held, true)
      await granted.release()
      assert.equal(lease.signal.aborted, false)
    })
  })

  it('after a slot moved, a hand-over on it arrives by its notice on the new owner', async () => {
    await withCluster(async (cluster, [holder, waiter]) => {
      const name = 'moves/notice-after-move'
      const slot = slotOfName(name)
      // Both clients subscribed to the slot on its first node.
      const first = await holder!.mutex(name, { ttl: TTL }).acquire()
      const queued = waiter!.mutex(name, { ttl: TTL }).acquire({ wait: ms(120_000) })
      queued.catch(() => {})
      await first.release()
      await (await withTimeout(queued, PROMPT, 'the first hand-over')).release()
      const from = await clusterSlotOwner(cluster, slot)
      await moveClusterSlot(cluster, slot, cluster.nodes.find((n) => n !== from)!)
      // The next hand-over happens on the new owner.
      const lease = await holder!.mutex(name, { ttl: TTL }).acquire()
      const waiting = waiter!.mutex(name, { ttl: TTL }).acquire({ wait: ms(120_000) })
      waiting.catch(() => {}) // awaited below; a failure is the test's, not an unhandled rejection
      await withTimeout((async () => {
        while ((await holder!.inspect(name))?.waiters.length !== 1) await new Promise((r) => setTimeout(r, 20))
      })(), ms(10_000), 'the waiter in line')
      await lease.release()
      const granted = await withTimeout(waiting, PROMPT, 'the hand-over after the move')
      await granted.release()
    })
  })
})
