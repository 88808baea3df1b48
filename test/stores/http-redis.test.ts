/** The conformance suite on http://, through a `baton serve` child process on a redis-server. */
import { runConformance } from '../conformance/index.js'
import { startBatonServer } from '../harness/baton-server.js'
import { startRedis } from '../harness/servers.js'

runConformance('http:// (server on redis)', async () => {
  const redis = await startRedis()
  const server = await startBatonServer(['--store', redis.url])
  return {
    url: server.base,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: async () => {
      await server.stop()
      await redis.stop()
    },
    // The lock server restarted (kill -9): the holds are in Redis, they outlive it.
    faults: { ports: [server.port], restart: () => server.restart(), exceptions: {} },
  }
})
