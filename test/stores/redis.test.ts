/** The conformance suite on a standalone redis-server started for this file, as an ACL user with an awkward password. */
import { runConformance } from '../conformance/index.js'
import { addRedisUser, awkwardPassword, startRedis } from '../harness/servers.js'

runConformance('redis://', async () => {
  const server = await startRedis()
  const password = awkwardPassword()
  await addRedisUser(server.port, 'app', password)
  return {
    // Pasted as is: '#', '@' and '/' unencoded.
    url: `redis://app:${password}@127.0.0.1:${server.port}`,
    secret: password,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
    faults: {
      ports: [server.port],
      restart: async () => {
        await server.restart()
        await addRedisUser(server.port, 'app', password)
      },
      exceptions: {
        restart: 'a redis-server restarted empty forgets every hold and can tell nobody: the holder learns at its next renewal (ttl/3); ' +
          'fencing tokens keep increasing (store clock floor), which is what protects the resource meanwhile',
      },
    },
  }
})
