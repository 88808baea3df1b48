/** The conformance suite on a 3-master Redis Cluster: every key of a lock shares one slot. */
import { runConformance } from '../conformance/index.js'
import { startRedisCluster } from '../harness/servers.js'

runConformance('redis+cluster://', async () => {
  const cluster = await startRedisCluster(3)
  return {
    url: cluster.url,
    crossProcess: true,
    // Freezing every master at once is the cluster's "store frozen" case.
    pause: () => cluster.nodes.forEach((node) => node.pause()),
    resume: () => cluster.nodes.forEach((node) => node.resume()),
    close: () => cluster.stop(),
    faults: {
      ports: cluster.nodes.map((node) => node.port),
      // Every master restarted empty (kept identity and slots): the cluster's "server restarted".
      restart: async () => {
        await Promise.all(cluster.nodes.map((node) => node.restart()))
      },
      exceptions: {
        proxy: 'cluster clients follow the addresses the nodes announce (CLUSTER SLOTS), so a proxy in front of the seed ports ' +
          'is bypassed; the reply, partition and reset faults run on redis:// single, whose driver code is the same',
        restart: 'masters restarted empty forget every hold and can tell nobody: the holder learns at its next renewal (ttl/3)',
      },
    },
  }
})
