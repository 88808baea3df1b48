/** The conformance suite on redlock:// over 3 independent redis-servers, as an ACL user with an awkward password. */
import { runConformance } from '../conformance/index.js'
import { startRedlock } from '../harness/redlock.js'
import { addRedisUser, awkwardPassword } from '../harness/servers.js'

runConformance('redlock://', async () => {
  const setup = await startRedlock(3)
  const password = awkwardPassword()
  await Promise.all(setup.nodes.map((node) => addRedisUser(node.port, 'app', password)))
  const hosts = setup.nodes.map((node) => `127.0.0.1:${node.port}`).join(',')
  return {
    url: `redlock://app:${password}@${hosts}`,
    secret: password,
    crossProcess: true,
    // Every master frozen at once is the store frozen.
    pause: () => setup.nodes.forEach((node) => node.pause()),
    resume: () => setup.nodes.forEach((node) => node.resume()),
    close: () => setup.stop(),
    faults: {
      ports: setup.nodes.map((node) => node.port),
      // One master of three restarted empty: the restart guard keeps it out of majorities.
      restart: async () => {
        await setup.nodes[0]!.restart()
        await addRedisUser(setup.nodes[0]!.port, 'app', password)
      },
    },
  }
})
