/**
 * Redis Cluster >= 7: wake-ups go by sharded pub/sub (SPUBLISH to the shard
 * of the lock's slot), so a hand-over costs the same on 3 nodes as on 100;
 * plain PUBLISH would be broadcast over the cluster bus to every node.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { countEvents } from '../conformance/context.js'
import { redisCommand, startRedisCluster, stopAll } from '../harness/servers.js'

after(() => stopAll())

async function sum(ports: number[], command: string[], field: RegExp): Promise<number> {
  let total = 0
  for (const port of ports) total += Number(field.exec(String(await redisCommand(port, command)))?.[1] ?? 0)
  return total
}

const stats = (ports: number[]) => Promise.all([
  sum(ports, ['INFO', 'commandstats'], /^cmdstat_publish:calls=(\d+)/m),
  sum(ports, ['INFO', 'commandstats'], /^cmdstat_spublish:calls=(\d+)/m),
  sum(ports, ['CLUSTER', 'INFO'], /^cluster_stats_messages_publish_sent:(\d+)/m),
])

describe('redis cluster: sharded wake-ups', () => {
  it('hand-overs are published with SPUBLISH on the lock\'s shard, never broadcast', async () => {
    const cluster = await startRedisCluster(3)
    const ports = cluster.nodes.map((n) => n.port)
    const clients = [await connect(cluster.url), await connect(cluster.url)]
    const handoffs = countEvents<{ handoff: boolean }>('baton:acquire', (e) => e.handoff)
    const [publishBefore, spublishBefore, busBefore] = await stats(ports)
    try {
      // 4 flows over 2 clients on each of 3 names (spread over the shards).
      await Promise.all(['sharded/a', 'sharded/b', 'sharded/c'].flatMap((name) =>
        [0, 1, 2, 3].map(async (flow) => {
          for (let i = 0; i < 25; i++) {
            const lease = await clients[flow % 2]!.mutex(name).acquire({ wait: '30s' })
            await new Promise((r) => setTimeout(r, 1))
            await lease.release()
          }
        })))
      const [publishAfter, spublishAfter, busAfter] = await stats(ports)
      assert.ok(handoffs.count() > 0, 'some grants came by a wake-up')
      assert.ok(spublishAfter - spublishBefore >= handoffs.count(), `${spublishAfter - spublishBefore} SPUBLISH for ${handoffs.count()} hand-overs`)
      assert.equal(publishAfter - publishBefore, 0, 'no PUBLISH')
      assert.equal(busAfter - busBefore, 0, 'nothing broadcast over the cluster bus')
    } finally {
      handoffs.stop()
      await Promise.all(clients.map((c) => c.close()))
      await cluster.stop()
    }
  })
})
