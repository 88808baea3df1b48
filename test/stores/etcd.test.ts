/** The conformance suite on a single etcd member started for this file. */
import { runConformance } from '../conformance/index.js'
import { startEtcd } from '../harness/etcd.js'

runConformance('etcd://', async () => {
  const etcd = await startEtcd()
  const member = etcd.members[0]!
  return {
    url: etcd.url,
    crossProcess: true,
    pause: () => member.pause(),
    resume: () => member.resume(),
    close: () => etcd.stop(),
    // kill -9 and start again on the same data directory.
    faults: {
      ports: [member.port],
      restart: () => member.restart(),
    },
  }
})
