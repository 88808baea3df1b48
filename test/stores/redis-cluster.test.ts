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
  }
})
