/** The conformance suite on http://, through a `baton serve` child process on its embedded memory store. */
import { runConformance } from '../conformance/index.js'
import { startBatonServer } from '../harness/baton-server.js'

runConformance('http:// (server on memory)', async () => {
  const server = await startBatonServer()
  return {
    url: server.base,
    crossProcess: true,
    pause: () => server.pause(),
    resume: () => server.resume(),
    close: () => server.stop(),
  }
})
