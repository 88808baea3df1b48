/** The conformance suite on a single ZooKeeper server started for this file. */
import { runConformance } from '../conformance/index.js'
import { startZookeeper } from '../harness/zookeeper.js'

runConformance('zk://', async () => {
  const zk = await startZookeeper()
  const server = zk.servers[0]!
  return {
    url: `zk://${zk.hosts}/conformance`,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => zk.stop(),
    // kill -9 and start again on the same data directory (sessions survive a short outage).
    faults: {
      ports: [server.port],
      restart: () => server.restart(),
    },
  }
})
