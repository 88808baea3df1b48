/**
 * ZooKeeper renewals on a 3-server ensemble whose follower is cut off from
 * its leader: the follower still answers plain reads from its own copy for
 * up to syncLimit ticks, while the leader expires the sessions it no longer
 * hears of and gives their places away. A renewal must not be confirmed by
 * that stale copy.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect, type Baton } from '../../src/index.js'
import { stopAll } from '../harness/servers.js'
import { ms } from '../harness/timing.js'
import { startZookeeperEnsemble, ZK_TICK_MS, type ZkEnsemble, type ZkServer } from '../harness/zookeeper.js'

let ensemble: ZkEnsemble
const clients: Baton[] = []
async function client(server: ZkServer): Promise<Baton> {
  const baton = await connect(`zk://127.0.0.1:${server.port}`)
  clients.push(baton)
  return baton
}

// A 1 s ttl (scaled): a session of twice that. A follower keeps serving
// SYNC_LIMIT ticks without its leader, at least 5 s and always 2.5 times that
// session, so the stale copy outlives the session at any timing scale.
const TTL_MS = ms(1000)
const SYNC_LIMIT = Math.max(20, Math.ceil((TTL_MS * 2 * 2.5) / ZK_TICK_MS))

before(async () => {
  ensemble = await startZookeeperEnsemble(3, { peerLinks: true, syncLimit: SYNC_LIMIT })
})
after(async () => {
  await Promise.allSettled(clients.map((c) => c.close()))
  await stopAll()
})

describe('zookeeper: a follower cut off from its leader', () => {
  it('a holder connected to it is not renewed from its stale copy: its hold ends before another client is granted', async () => {
    let leader: ZkServer | undefined
    for (const server of ensemble.servers) if ((await ensemble.mode(server)) === 'leader') leader = server
    assert.ok(leader, 'the ensemble has a leader')
    const follower = ensemble.servers.find((s) => s !== leader)!
    const [cutOff, other] = [await client(follower), await client(leader)]
    const name = 'follower/stale'
    const holder = await cutOff.mutex(name, { ttl: TTL_MS }).acquire({ autoExtend: true })
    try {
      ensemble.partition(follower, leader)
      // The leader expires the holder's session (its pings no longer reach it) and grants the name.
      const next = await other.mutex(name, { ttl: TTL_MS }).acquire({ wait: ms(20_000) })
      assert.equal(holder.signal.aborted, true, 'the cut-off holder had lost its hold before the next one was granted')
      await next.release()
    } finally {
      ensemble.heal()
    }
  })
})
