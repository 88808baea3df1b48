/** The conformance suite on a standalone redis-server started for this file. */
import { runConformance } from '../conformance/index.js'
import { startRedis } from '../harness/servers.js'

runConformance('redis://', async () => {
  const server = await startRedis()
  return {
    url: server.url,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})
